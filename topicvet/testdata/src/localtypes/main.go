// Two functions declare a type Event each. A type is named by its package
// and name, so the two are taken for one topic: the publication of one is
// counted as received by the subscription of the other, and no check
// reports (a limit).
package main

import (
	"fmt"

	"github.com/seedaa7df82c/topic"
)

func publish(b *topic.Broker) {
	type Event struct{ ID int }
	b.Publish(Event{ID: 1})
}

func subscribe(b *topic.Broker) {
	type Event struct{ ID int }
	events, cancel := b.Subscribe[Event]()
	defer cancel()
	fmt.Println(<-events)
}

func main() {
	var b topic.Broker
	subscribe(&b)
	publish(&b)
}
