package options

import (
	"testing"
	"time"

	"github.com/seedaa7df82c/topic"
)

func wantPanic(t *testing.T, f func()) {
	defer func() { recover() }()
	f()
}

func TestPanics(t *testing.T) {
	var b topic.Broker
	wantPanic(t, func() { b.Watch(0, nil) })
	t.Run("a subtest", func(t *testing.T) {
		b.Watch(0, func(topic.Incident) {}) // want `Watch panics: its interval must be positive`
	})
}

func TestRecovers(t *testing.T) {
	defer func() { recover() }()
	var b topic.Broker
	b.Retain[Order](topic.Retention{})
	_ = time.Second
}
