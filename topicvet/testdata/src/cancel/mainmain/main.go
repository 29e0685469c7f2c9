// main.main's return ends the program: a handler or a subscription made
// there lives as long as the program, discarded or not. A function literal
// in it is a function of its own.
package main

import (
	"context"
	"fmt"

	"github.com/seedaa7df82c/topic"
)

type Order struct{ ID int }

func main() {
	var b topic.Broker
	b.Handle(func(_ context.Context, o Order) error { fmt.Println(o); return nil })
	orders, _ := b.Subscribe[Order](topic.Follow[Order]())
	go func() {
		for o := range orders {
			fmt.Println(o)
		}
	}()
	go func() {
		b.Handle(func(_ context.Context, o Order) error { return nil }) // want `the stop function of Handle is discarded`
	}()
	b.Publish(Order{ID: 1})
	select {}
}
