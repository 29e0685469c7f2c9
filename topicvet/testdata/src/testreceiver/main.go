// A program that publishes Lost, which nothing in the program receives; a
// test of the package subscribes to it. The test is no part of the
// program: the publication is reported, in go vet's analysis of the
// package with its tests as in topicvet's of the package alone.
package main

import (
	"github.com/seedaa7df82c/topic"
)

type Lost struct{}

func run(b *topic.Broker) {
	b.Publish(Lost{}) // want `main.Lost is published, but nothing in the program receives it`
}

func main() {
	var b topic.Broker
	run(&b)
}
