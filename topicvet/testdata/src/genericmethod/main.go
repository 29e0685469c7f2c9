// Ev has a generic method Ping, which does not implement Pinger's Ping:
// the subscription of Pinger does not receive Ev.
package main

import "github.com/seedaa7df82c/topic"

type Ev struct{}

func (Ev) Ping[T any]() {}

type Pinger interface{ Ping() }

type Pong struct{}

func (Pong) Ping() {}

func main() {
	var b topic.Broker
	pings, cancel := b.Subscribe[Pinger]()
	defer cancel()
	b.Publish(Ev{}) // want `main.Ev is published, but nothing in the program receives it`
	b.Publish(Pong{})
	<-pings
}
