// A method called through an interface the value is put in is not seen at
// a call: an instance written in a function or a package variable counts,
// implicitly, as receiving its type, and is never reported itself.
package main

import (
	"github.com/seedaa7df82c/topic"

	"methodcalls/lib"
)

type Config struct{}

type Flags struct{}

var flags = &lib.Store[Flags]{}

type Mode struct{}

// An app embeds a store of Mode, whose Watch it is given.
type app struct{ lib.Store[Mode] }

type watcher interface{ Watch(*topic.Broker) func() }

func main() {
	var b topic.Broker
	var w watcher = &lib.Store[Config]{}
	defer w.Watch(&b)()
	b.Publish(Config{})
	var f watcher = flags
	defer f.Watch(&b)()
	b.Publish(Flags{})
	var a app
	var m watcher = &a
	defer m.Watch(&b)()
	b.Publish(Mode{})
}
