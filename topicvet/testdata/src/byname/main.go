// The types lib's helpers build are known by name, in a program that does
// not import their package, and with components a template holds by key:
// what is received is not reported, what is not is.
package main

import (
	"github.com/seedaa7df82c/topic"

	"byname/lib"
)

func main() {
	var b topic.Broker
	boxes, cancel := lib.Recv[int](&b)
	defer cancel()
	lib.Send(&b, 1)
	lib.Send(&b, "lost") // want `box.Box\[string\] is published, but nothing in the program receives it`
	<-boxes

	errs, cancelErrs := lib.RecvErr[int](&b)
	defer cancelErrs()
	lib.SendErr(&b, 1)
	<-errs

	sets, cancelSets := lib.RecvSet[int](&b)
	defer cancelSets()
	lib.SendSet(&b, 1)
	lib.SendSet(&b, "lost") // want `map\[string\]struct\{\} is published, but nothing in the program receives it`
	<-sets

	lib.SendFunc(&b, 1)  // want `lib.Pair\[int, func\(\)\] is published, but nothing in the program receives it`
	lib.SendIface(&b, 1) // want `lib.Pair\[int, interface\{M\(\)\}\] is published, but nothing in the program receives it`
	lib.Forward(&b, 2)   // want `box.Box\[\[\]int\] is published, but nothing in the program receives it`
}
