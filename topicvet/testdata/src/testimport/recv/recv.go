// Package recv receives ev.Ev; only the program's tests import it.
package recv

import (
	"github.com/seedaa7df82c/topic"

	"testimport/ev"
)

func Drain(b *topic.Broker) func() {
	ch, cancel := b.Subscribe[ev.Ev]()
	go func() {
		for range ch {
		}
	}()
	return cancel
}
