package main

import (
	"testing"

	"github.com/seedaa7df82c/topic"
)

func TestRun(t *testing.T) {
	var b topic.Broker
	ch, cancel := b.Subscribe[Lost]()
	defer cancel()
	run(&b)
	<-ch
}
