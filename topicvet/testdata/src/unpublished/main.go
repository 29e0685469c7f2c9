package main

import (
	"context"

	"github.com/seedaa7df82c/topic"

	"program/lib"
)

type Refund struct{ ID int }

type Listened struct{}

type Unsent struct{}

type Order struct{ ID int }

func main() {
	var b topic.Broker
	refunds, cancelRefunds := b.Subscribe[Refund]() // want `main.Refund is received \(subscribe\), but nothing in the program publishes it`
	defer cancelRefunds()
	<-refunds
	stopListened := lib.Listen(&b, func(Listened) {}) // want `main.Listened is received \(handle\), but nothing in the program publishes it`
	defer stopListened()
	recs, _, _ := b.Read[Order](0, 10) // want `main.Order is received \(read\), but nothing in the program publishes it`
	_ = recs
}

func handleAll(ctx context.Context, b *topic.Broker) {
	stop := b.Handle(func(context.Context, Unsent) error { return nil }, topic.Context[Unsent](ctx)) // want `main.Unsent is received \(handle\), but nothing in the program publishes it`
	defer stop()
}
