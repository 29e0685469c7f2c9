// A program whose topics are built from the type parameters of helpers of
// another package: every publication is received, every subscription is
// published to (the program runs and prints them). No check reports.
package main

import (
	"fmt"

	"github.com/seedaa7df82c/topic"

	"helpertemplate/lib"
)

type Order struct{ ID int }

func main() {
	var b topic.Broker
	ch, cancel := b.Subscribe[*Order]() // published by lib.SendPtr[Order]
	defer cancel()
	boxes, cancelBoxes := b.Subscribe[lib.Box[Order]]() // published by lib.SendBox[Order]
	defer cancelBoxes()
	slices, cancelSlices := lib.ListenSlice[Order](&b)
	defer cancelSlices()
	lib.SendPtr(&b, Order{ID: 1})
	lib.SendBox(&b, Order{ID: 2})
	b.Publish([]Order{{ID: 3}}) // received by lib.ListenSlice[Order]
	fmt.Println(<-ch, <-boxes, <-slices)
}
