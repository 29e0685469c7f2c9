// The methods of a generic type are followed at their calls, not where
// the type's name is written: a Store[Config] whose Watch is never called
// receives nothing, and is not reported. A Topic[Order] written here
// counts as receiving Order, implicitly (its Sub may be called through an
// interface): Order is not reported, a limit.
package main

import (
	"fmt"

	"github.com/seedaa7df82c/topic"

	"methodcalls/lib"
)

type Config struct{}

type Order struct{}

// A defined type and an assertion instantiate the methods of nothing.
type ConfigStore lib.Store[Config]

type getter interface{ Get() Config }

var _ getter = (*lib.Store[Config])(nil)

// An alias instantiates nothing either.
type S[T any] = lib.Store[T]

type Lost struct{}

func main() {
	var b topic.Broker
	var s lib.Store[Config]
	s.Set(Config{})
	fmt.Println(s.Get())

	orders := lib.Topic[Order]{B: &b}
	orders.Pub(Order{})

	b.Publish(Lost{}) // want `main.Lost is published, but nothing in the program receives it`
}
