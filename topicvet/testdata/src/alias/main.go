// A program that names its topics through type aliases, generic ones
// included: an alias is the type it stands for, one topic. No check
// reports.
package main

import (
	"fmt"

	"github.com/seedaa7df82c/topic"
)

type Order struct{ ID int }

type O = Order

type Pair[K comparable, V any] struct {
	K K
	V V
}

type ByID[V any] = Pair[int, V]

type OrderPtr = *Order

func main() {
	var b topic.Broker
	ch, cancel := b.Subscribe[Order]()
	defer cancel()
	pairs, cancelPairs := b.Subscribe[Pair[int, string]]()
	defer cancelPairs()
	ptrs, cancelPtrs := b.Subscribe[OrderPtr]()
	defer cancelPtrs()
	b.Publish(O{ID: 1})
	b.Publish(ByID[string]{1, "x"})
	b.Publish(&Order{ID: 2})
	fmt.Println(<-ch, <-pairs, <-ptrs)
	basics(&b)
}
