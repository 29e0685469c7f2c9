package cancel

import (
	"context"
	"testing"

	"github.com/seedaa7df82c/topic"
)

var shared topic.Broker

func TestOwnBroker(t *testing.T) {
	var b topic.Broker
	b.Handle(func(context.Context, Tick) error { return nil })
	setup(&b)
}

func setup(b *topic.Broker) {
	b.Handle(func(context.Context, Tick) error { return nil })
}

func TestSharedBroker(t *testing.T) {
	shared.Handle(func(context.Context, Tick) error { return nil }) // want `the stop function of Handle is discarded`
}

func TestPanic(t *testing.T) {
	defer func() { recover() }()
	shared.Handle[Tick](nil)
}
