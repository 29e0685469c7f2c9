// A generic method of a generic type is an instance where it is called,
// with the receiver's type arguments and its own: writing the type's name
// makes none of its endpoints (it lacks the method's type arguments).
package main

import (
	"github.com/seedaa7df82c/topic"

	"genericmethodoftype/lib"
)

type Order struct{}

type Lost struct{}

func main() {
	var b topic.Broker
	w := lib.Worker[Order]{B: &b}
	ch, cancel := lib.Worker[Order].Take[int](w)
	defer cancel()
	w.Emit(1)
	<-ch
	w.Emit(Lost{}) // want `lib.Tagged\[main.Order, main.Lost\] is published, but nothing in the program receives it`
}
