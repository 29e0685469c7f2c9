package main

import (
	"testing"

	"github.com/seedaa7df82c/topic"

	"testimport/recv"
)

func TestRun(t *testing.T) {
	var b topic.Broker
	defer recv.Drain(&b)()
	run(&b)
}
