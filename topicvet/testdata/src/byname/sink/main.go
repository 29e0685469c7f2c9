// An interface a helper of another package builds by name has the methods
// of its template, the type argument put in: a Sink[[]uint8] receives
// Bytes, not Bin.
package main

import (
	"github.com/seedaa7df82c/topic"

	"byname/lib"
)

type Bin struct{}

func (Bin) Put([]int) {}

type Bytes struct{}

func (Bytes) Put([]byte) {}

func main() {
	var b topic.Broker
	defer lib.Collect[[]uint8](&b)()
	b.Publish(Bytes{})
	b.Publish(Bin{}) // want `main.Bin is published, but nothing in the program receives it`
}
