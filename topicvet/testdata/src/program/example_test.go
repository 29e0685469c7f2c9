package main

import (
	"testing"

	"github.com/seedaa7df82c/topic"
)

type Shown struct{}

type Tested struct{}

func ExampleShown() {
	var b topic.Broker
	b.Publish(Shown{}) // want `main.Shown is published, but nothing in the program receives it`
}

func TestTested(t *testing.T) {
	var b topic.Broker
	b.Publish(Tested{}) // a test shows that nothing receives it
}
