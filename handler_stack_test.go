// The race detector's instrumentation changes the stacks this measures: it
// runs without the detector (make test, make cover).

//go:build !race

package topic_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/seedaa7df82c/topic"
)

// An idle handler's goroutine keeps the smallest stack a goroutine starts
// with, as one parked on a channel receive does: ten thousand idle handlers
// (a server's clients) hold 2 KiB of stack each, not 4. A goroutine's stack
// doubles when a call would go deeper than it allows, and never shrinks
// back while its goroutine uses more than a quarter of it; a handler parks
// in a select, whose first wait allocates the runtime's records of it,
// several calls deep: a large frame on the way (a Loss[T] built in drain;
// for a follower, next's own selects, above its wait in the log) made every
// idle handler's stack 4 KiB. Measured in a child process, so
// that no other test's goroutines count, with the runtime's adaptive
// starting size off (GODEBUG=adaptivestackstart=0), which would make every
// new goroutine's stack the average size.
func TestAnIdleHandlerKeepsTheSmallestStack(t *testing.T) {
	if os.Getenv("TOPIC_STACK_CHILD") == "1" {
		synctest.Test(t, childStacks)
		return
	}
	out, err := runSelf([]string{"TOPIC_STACK_CHILD=1", "GODEBUG=adaptivestackstart=0"}, "-test.run=^TestAnIdleHandlerKeepsTheSmallestStack$", "-test.count=1")
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var handler, follower, receiver float64
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "stacks" {
			handler, _ = strconv.ParseFloat(f[1], 64)
			follower, _ = strconv.ParseFloat(f[2], 64)
			receiver, _ = strconv.ParseFloat(f[3], 64)
		}
	}
	if receiver == 0 {
		t.Fatalf("the child measured nothing:\n%s", out)
	}
	t.Logf("stack per idle goroutine: %.0f bytes for a handler, %.0f for a handler following a log, %.0f for a goroutine parked on a receive",
		handler, follower, receiver)
	for _, c := range []struct {
		name  string
		bytes float64
	}{{"an idle handler", handler}, {"an idle handler following a log", follower}} {
		if c.bytes > 1.25*receiver {
			t.Errorf("%s holds %.0f bytes of stack, %.2fx a goroutine parked on a receive (%.0f): its stack grew",
				c.name, c.bytes, c.bytes/receiver, receiver)
		}
	}
}

// stackValue is a 32-byte value, the size of the benchmarks' Value.
type stackValue struct{ A, B, C, D int64 }

// childStacks measures, in a synctest bubble so that each goroutine parks
// before the next starts: goroutines started together contend for the
// locks of the broker and of the runtime, and a sync.Mutex's wait goes
// deeper than the wait measured, at random (1 run in 10 found 30 % of them
// at 4 KiB, on code that fits in 2).
func childStacks(t *testing.T) {
	const n = 2000
	parked := func(start func() func()) float64 {
		var before, after runtime.MemStats
		stops := make([]func(), n)
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range stops {
			stops[i] = start()
			synctest.Wait() // parked: none contends with another starting
		}
		runtime.GC() // after the goroutines have parked: ReadMemStats stops the world
		runtime.ReadMemStats(&after)
		for _, stop := range stops {
			stop()
		}
		return float64(after.StackInuse-before.StackInuse) / n
	}
	var b, logged topic.Broker
	handler := parked(func() func() {
		stop := b.Handle(func(context.Context, stackValue) error { return nil })
		b.Publish(stackValue{}) // one value handled: the loop ran once
		return stop
	})
	// Followers that wait alone: a publication that wakes thousands at
	// once makes them contend for the log's list of those waiting,
	// and a sync.Mutex's wait goes deeper.
	logged.Retain[stackValue](topic.Retention{Count: 4})
	follower := parked(func() func() {
		return logged.Handle(func(context.Context, stackValue) error { return nil }, topic.Follow[stackValue]())
	})
	receiver := parked(func() func() {
		c := make(chan stackValue)
		go func() { <-c }()
		return func() { close(c) }
	})
	fmt.Printf("stacks %.0f %.0f %.0f\n", handler, follower, receiver)
}
