// Limits of a generic type's methods and of a type built by name. A
// Topic[Order] written here counts as receiving Order, for its Sub might
// be called through an interface: Order, which nothing receives, is not
// reported. A box.Box[string] that a helper of another package builds has
// a method set not known: it counts as received by the subscription of an
// interface with a method, and is not reported.
package main

import (
	"github.com/seedaa7df82c/topic"

	bylib "byname/lib"
	"methodcalls/lib"
)

type Order struct{}

type Stringer interface{ String() string }

func main() {
	var b topic.Broker
	orders := lib.Topic[Order]{B: &b}
	orders.Pub(Order{})

	ss, cancel := b.Subscribe[Stringer]()
	defer cancel()
	bylib.Send(&b, "x")
	<-ss
}
