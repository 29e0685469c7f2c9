// A program that publishes ev.Ev, which only a package its tests import
// receives: that package is no part of the program, and the publication
// is reported, whether the package is analysed with its tests or not.
package main

import (
	"github.com/seedaa7df82c/topic"

	"testimport/ev"
)

func run(b *topic.Broker) {
	b.Publish(ev.Ev{}) // want `ev.Ev is published, but nothing in the program receives it`
}

func main() {
	var b topic.Broker
	run(&b)
}
