package topic_test

// Tests of handlers that stop each other and call Shutdown from their
// functions, and of a handler ended by its Context. A handler whose
// function waits in Shutdown or in the stop of another handler is parked
// (see parking in shutdown.go): the drain does not wait for it, chains and
// cycles of stops unwind, a drain cut short by its context ends, and every
// Shutdown call returns the one outcome. A hang fails the test with the
// package's goroutines (withinOrDump).

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

// valA to valK are distinct types published by the tests of several files
// (each test has a broker of its own).
type (
	valA struct{ N int }
	valB struct{ N int }
	valC struct{ N int }
	valD struct{ N int }
	valK struct{ N int }
)

// withinOrDump runs f on a goroutine and fails if it does not return within d.
func withinOrDump(t *testing.T, d time.Duration, what string, f func()) bool {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Errorf("%s: hung for %v\n%s", what, d, topicGoroutines(buf[:n]))
		return false
	}
}

// topicGoroutines keeps the goroutines of the stack dump that are in the topic
// package.
func topicGoroutines(dump []byte) string {
	var out []string
	for _, g := range strings.Split(string(dump), "\n\n") {
		if strings.Contains(g, "seedaa7df82c/topic.") && !strings.Contains(g, "withinOrDump") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// A stops B, B stops C, C calls Shutdown: the chain unwinds.
func TestAChainOfStopsEndingInAShutdownUnwinds(t *testing.T) {
	for trial := range 20 {
		var b topic.Broker
		var stopB, stopC func()
		var handled [3]atomic.Int64
		inC := make(chan struct{})
		stopC = b.Handle(func(_ context.Context, v valC) error {
			handled[2].Add(1)
			if v.N == 0 {
				close(inC)
				if err := b.Shutdown(context.Background()); err != nil {
					t.Errorf("Shutdown in C = %v", err)
				}
			}
			return nil
		}, topic.Name[valC]("c"))
		inB := make(chan struct{})
		stopB = b.Handle(func(_ context.Context, v valB) error {
			handled[1].Add(1)
			if v.N == 0 {
				<-inC
				close(inB)
				stopC()
			}
			return nil
		}, topic.Name[valB]("b"))
		b.Handle(func(_ context.Context, v valA) error {
			handled[0].Add(1)
			if v.N == 0 {
				<-inB
				stopB()
			}
			b.Publish(valC{v.N + 100}) // C is stopped by then: dropped (cancelled)
			return nil
		}, topic.Name[valA]("a"))
		for i := range 3 {
			b.Publish(valA{i})
		}
		b.Publish(valB{0})
		b.Publish(valC{0}) // last: C's Shutdown closes the broker
		if trial%2 == 0 {
			select {
			case <-inB:
			case <-time.After(10 * time.Second):
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				t.Fatalf("trial %d: B never reached its stop of C: handled %d %d %d, %d goroutines of the broker, snapshot %+v\n%s",
					trial, handled[0].Load(), handled[1].Load(), handled[2].Load(), b.Goroutines(), b.Subscriptions(), buf[:n])
			}
		}
		withinOrDump(t, 5*time.Second, fmt.Sprintf("trial %d: outer Shutdown", trial), func() {
			if err := b.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown = %v", err)
			}
		})
		if g := b.Goroutines(); g != 0 {
			t.Errorf("trial %d: %d goroutines", trial, g)
		}
	}
}

// A handler's From function, run on another handler's worker, stops a
// third handler whose function is inside Shutdown; the From function's
// handler is stopped meanwhile from outside, while parked.
func TestAStopFromAFromFunctionOnAWorkerIsParked(t *testing.T) {
	for trial := range 20 {
		var b topic.Broker
		inC := make(chan struct{})
		stopC := b.Handle(func(_ context.Context, v valC) error {
			close(inC)
			return b.Shutdown(context.Background())
		})
		// S's From function runs on A's worker (A publishes valK).
		parkedA := make(chan struct{})
		b.Subscribe(topic.Buffer[valD](4), topic.From(func(k valK) (valD, bool) {
			<-inC
			close(parkedA)
			stopC()
			return valD(k), true
		}))
		stopA := b.Handle(func(_ context.Context, v valA) error {
			b.Publish(valK(v))
			return nil
		}, topic.Name[valA]("a"))
		b.Publish(valA{})
		b.Publish(valC{}) // last: C's Shutdown closes the broker
		var wg sync.WaitGroup
		wg.Go(func() {
			<-parkedA
			stopA() // A is parked in stop(C)
		})
		withinOrDump(t, 5*time.Second, fmt.Sprintf("trial %d: Shutdown", trial), func() {
			if err := b.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown = %v", err)
			}
			wg.Wait()
		})
	}
}

// Two handlers whose functions call Shutdown from inside, repeatedly, while
// publishing to each other and to a third: every value reaches the end.
func TestRepeatedShutdownsFromHandlersFeedingEachOther(t *testing.T) {
	for trial := range 20 {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			const n = 40
			out, _ := b.Subscribe(topic.Buffer[valD](4 * n))
			b.Handle(func(ctx context.Context, v valA) error {
				if v.N%3 == trial%3 {
					_ = b.Shutdown(ctx)
				}
				time.Sleep(time.Duration(v.N%7) * time.Microsecond)
				if v.N < n {
					b.Publish(valB{v.N + 1})
				}
				b.Publish(valD(v))
				return nil
			}, topic.Buffer[valA](4*n))
			b.Handle(func(ctx context.Context, v valB) error {
				if v.N%2 == 0 {
					_ = b.Shutdown(ctx)
					_ = b.Shutdown(ctx)
				}
				if v.N < n {
					b.Publish(valA{v.N + 1})
				}
				b.Publish(valD(v))
				return nil
			}, topic.Buffer[valB](4*n))
			b.Publish(valA{0})
			if err := b.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := len(takeAll(out))
			var lost uint64
			for _, st := range b.Subscriptions() {
				lost += st.Lost.Total()
			}
			if got != n+1 || lost != 0 {
				t.Errorf("trial %d: %d values at the end, want %d; lost %d", trial, got, n+1, lost)
			}
		})
	}
}

// A handler parked in Shutdown whose context ends while another handler
// is parked in a stop of it: the drain is cut, nothing hangs.
func TestAParkedShutdownWhoseContextEndsWhileAnotherIsParkedInAStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		block := make(chan struct{})
		inB := make(chan struct{})
		stopB := b.Handle(func(_ context.Context, v valB) error {
			close(inB)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := b.Shutdown(ctx)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Shutdown in B = %v, want deadline", err)
			}
			return nil
		}, topic.Name[valB]("b"))
		b.Handle(func(_ context.Context, v valA) error {
			<-inB
			stopB()
			return nil
		})
		// C never returns until block: the drain waits for it until B's
		// context ends.
		b.Handle(func(ctx context.Context, v valC) error {
			select {
			case <-block:
			case <-ctx.Done():
			}
			return nil
		})
		b.Publish(valC{})
		b.Publish(valB{})
		b.Publish(valA{})
		err := b.Shutdown(context.Background())
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("outer Shutdown = %v, want the deadline of B's", err)
		}
		close(block)
		synctest.Wait()
		if g := b.Goroutines(); g != 0 {
			t.Errorf("%d goroutines", g)
		}
	})
}

// Every Shutdown call returns the one outcome: a call whose context has
// already ended, made once the broker is sealed but before the workers have
// ended, returns its own error (and cuts the drain short), while the first
// call and every later one return nil.
func TestShutdownCallsAgreeOnTheOutcome(t *testing.T) {
	bad := 0
	for trial := range 200 {
		var b topic.Broker
		sealed, _ := b.Subscribe[valD]()
		for range 4 {
			b.Handle(func(context.Context, valA) error { return nil })
		}
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		var errs [3]error
		var wg sync.WaitGroup
		wg.Go(func() { errs[0] = b.Shutdown(context.Background()) })
		wg.Go(func() {
			for range sealed {
			}
			errs[1] = b.Shutdown(cancelled)
		})
		wg.Wait()
		errs[2] = b.Shutdown(context.Background())
		if errs[0] != errs[1] || errs[1] != errs[2] {
			bad++
			if bad <= 3 {
				t.Errorf("trial %d: the calls returned %v, %v, %v", trial, errs[0], errs[1], errs[2])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of 200 trials: Shutdown calls disagree on the outcome", bad)
	}
}

// Two handlers stopping each other from their functions: each stop would
// wait for the other handler to end, which waits in its own stop; the
// second stop sees the cycle and returns at once, so both end.
func TestTwoHandlersStoppingEachOtherBothReturn(t *testing.T) {
	var b topic.Broker
	var stopA, stopB func()
	var ready sync.WaitGroup
	ready.Add(2)
	stopA = b.Handle(func(context.Context, valA) error {
		ready.Done()
		ready.Wait()
		stopB()
		return nil
	})
	stopB = b.Handle(func(context.Context, valB) error {
		ready.Done()
		ready.Wait()
		stopA()
		return nil
	})
	b.Publish(valA{})
	b.Publish(valB{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var err error
	if withinOrDump(t, 10*time.Second, "Shutdown with a 2s deadline", func() { err = b.Shutdown(ctx) }) {
		if err != nil || b.Goroutines() != 0 {
			t.Errorf("two handlers stopping each other: Shutdown = %v, %d goroutines left", err, b.Goroutines())
		}
	}
}

// A handler's OnLoss function, run on another handler's worker (which
// publishes into a full subscription), stops a third handler that is
// inside Shutdown.
func TestAStopFromAnOnLossFunctionOnAWorkerIsParked(t *testing.T) {
	for trial := range 50 {
		var b topic.Broker
		inC := make(chan struct{})
		stopC := b.Handle(func(_ context.Context, v valC) error {
			close(inC)
			return b.Shutdown(context.Background())
		})
		b.Subscribe(topic.Buffer[valD](0), topic.OnLoss(func(topic.Loss[valD]) {
			<-inC
			stopC()
		}))
		b.Handle(func(_ context.Context, v valA) error {
			b.Publish(valD(v)) // unbuffered, no receiver: lost, OnLoss runs here
			return nil
		})
		b.Publish(valA{})
		b.Publish(valC{})
		withinOrDump(t, 5*time.Second, fmt.Sprintf("trial %d: Shutdown", trial), func() {
			if err := b.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown = %v", err)
			}
		})
	}
}

// A Context ends a handler as its stop would: with DiscardOnStop, what it
// queued is Discarded and the call in flight has its context cancelled.
func TestContextEndsADiscardOnStopHandlerAsItsStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		ctx, cancel := context.WithCancel(context.Background())
		gate := make(chan struct{})
		handled := 0
		var inFlight error
		stop := b.Handle(func(c context.Context, v hValue) error {
			if v.N == 0 {
				<-gate
				inFlight = c.Err()
			}
			handled++
			return nil
		}, topic.DiscardOnStop[hValue](), topic.Context[hValue](ctx), topic.Buffer[hValue](8))
		for i := range 5 {
			b.Publish(hValue{i})
		}
		synctest.Wait()
		cancel()
		synctest.Wait()
		close(gate)
		stop()
		if handled != 1 || inFlight == nil {
			t.Errorf("handled %d of 5, the call in flight's context %v; want 1 and cancelled, the rest Discarded", handled, inFlight)
		}
	})
}
