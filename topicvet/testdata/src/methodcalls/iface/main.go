// A method called through an interface the value is put in is not seen at
// a call: the instance written in the function counts, implicitly, as
// receiving Config, and is never reported itself.
package main

import (
	"github.com/seedaa7df82c/topic"

	"methodcalls/lib"
)

type Config struct{}

type watcher interface{ Watch(*topic.Broker) func() }

func main() {
	var b topic.Broker
	var w watcher = &lib.Store[Config]{}
	defer w.Watch(&b)()
	b.Publish(Config{})
}
