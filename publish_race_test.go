package topic

// Tests of cancels and Shutdown racing publications on every path a
// publication takes: nothing is sent on a channel once it is closed, every
// channel is closed once its cancel or Shutdown returns, and a
// subscription's loss counts are final once its cancel returns. They fail
// by a panic (a send on a closed channel), a race report, a hang, or a
// count that changes after it was final.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type (
	raceInt int
	raceOut int
	raceStr int
)

func (v raceStr) String() string { return "raceStr" }

// returnsWithin calls f and fails the test if it has not returned within d (a
// guard counter that never drains makes a cancel wait for ever).
func returnsWithin(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// subOf returns the subscription whose channel is ch.
func subOf[T any](b *Broker, ch <-chan T) *sub[T] {
	b.mu.Lock()
	defer b.mu.Unlock()
	var found *sub[T]
	each := func(s subscriber) {
		if x, ok := s.(*sub[T]); ok && (<-chan T)(x.ch) == ch {
			found = x
		}
	}
	for _, e := range b.all {
		e.edit.eachLocked(e, each)
	}
	for s := range b.held {
		each(s)
	}
	return found
}

// publishPath is a way a publication reaches a subscription: build subscribes
// what stays for the whole run on b, and returns the publication and a
// function that makes the subscription that is cancelled again and again,
// returning its channel and cancellation.
type publishPath struct {
	name  string
	build func(b *Broker) (publish func(i int), churn func() (<-chan int, func()))
}

// asIntChan makes a subscription of raceOut look like one of int to the
// churn function of a publishPath.
func asIntChan[T ~int](ch <-chan T, cancel func()) (<-chan int, func()) {
	out := make(chan int, 16)
	go func() {
		defer close(out)
		for v := range ch {
			select {
			case out <- int(v):
			default:
			}
		}
	}()
	return out, cancel
}

func publishPaths() []publishPath {
	fanout := func(n int) publishPath {
		return publishPath{fmt.Sprintf("direct fan-out of %d", n), func(b *Broker) (func(int), func() (<-chan int, func())) {
			for range n - 1 {
				b.Subscribe(Buffer[raceInt](1)) // full after the first publication: counts drops
			}
			return func(i int) { b.Publish(raceInt(i)) }, func() (<-chan int, func()) {
				return asIntChan(b.Subscribe(Buffer[raceInt](4)))
			}
		}}
	}
	return []publishPath{
		{"direct", func(b *Broker) (func(int), func() (<-chan int, func())) {
			return func(i int) { b.Publish(raceInt(i)) }, func() (<-chan int, func()) {
				return asIntChan(b.Subscribe(Buffer[raceInt](4)))
			}
		}},
		{"direct unbuffered", func(b *Broker) (func(int), func() (<-chan int, func())) {
			return func(i int) { b.Publish(raceInt(i)) }, func() (<-chan int, func()) {
				return asIntChan(b.Subscribe(Buffer[raceInt](0)))
			}
		}},
		fanout(64),
		{"boxed interface subscriptions only", func(b *Broker) (func(int), func() (<-chan int, func())) {
			b.Subscribe(Buffer[fmt.Stringer](1))
			return func(i int) { b.Publish(raceStr(i)) }, func() (<-chan int, func()) {
				ch, cancel := b.Subscribe(Buffer[fmt.Stringer](4))
				out := make(chan int, 16)
				go func() {
					defer close(out)
					for range ch {
						select {
						case out <- 0:
						default:
						}
					}
				}()
				return out, cancel
			}
		}},
		{"plain and boxed together (sendPlain)", func(b *Broker) (func(int), func() (<-chan int, func())) {
			b.Subscribe(Buffer[any](1))
			return func(i int) { b.Publish(raceInt(i)) }, func() (<-chan int, func()) {
				return asIntChan(b.Subscribe(Buffer[raceInt](4)))
			}
		}},
		{"plain and boxed together, the boxed one cancelled (sendPlain)", func(b *Broker) (func(int), func() (<-chan int, func())) {
			b.Subscribe(Buffer[raceStr](1))
			for range 32 {
				b.Subscribe(Buffer[fmt.Stringer](1)) // sent to before the one cancelled
			}
			return func(i int) { b.Publish(raceStr(i)) }, func() (<-chan int, func()) {
				ch, cancel := b.Subscribe(Buffer[fmt.Stringer](4))
				out := make(chan int, 16)
				go func() {
					defer close(out)
					for range ch {
						select {
						case out <- 0:
						default:
						}
					}
				}()
				return out, cancel
			}
		}},
		{"From source (solo)", func(b *Broker) (func(int), func() (<-chan int, func())) {
			return func(i int) { b.Publish(raceInt(i)) }, func() (<-chan int, func()) {
				return asIntChan(b.Subscribe(Buffer[raceOut](2), From[raceOut](func(v raceInt) (raceOut, bool) { return raceOut(v), v%3 != 0 })))
			}
		}},
		{"DropOldest (offerTo evicting)", func(b *Broker) (func(int), func() (<-chan int, func())) {
			return func(i int) { b.Publish(raceInt(i)) }, func() (<-chan int, func()) {
				return asIntChan(b.Subscribe(Buffer[raceInt](1), Overflow[raceInt](DropOldest)))
			}
		}},
		{"OnLoss beside plain ones (sendPlain then offer)", func(b *Broker) (func(int), func() (<-chan int, func())) {
			b.Subscribe(Buffer[raceInt](1))
			return func(i int) { b.Publish(raceInt(i)) }, func() (<-chan int, func()) {
				return asIntChan(b.Subscribe(Buffer[raceInt](1), OnLoss(func(Loss[raceInt]) {})))
			}
		}},
		{"retained, ordered sends", func(b *Broker) (func(int), func() (<-chan int, func())) {
			b.Retain[raceInt](Retention{Count: 8})
			b.Subscribe(Buffer[any](1))
			b.Subscribe(Buffer[raceInt](1), Overflow[raceInt](DropOldest))
			return func(i int) { b.Publish(raceInt(i)) }, func() (<-chan int, func()) {
				return asIntChan(b.Subscribe(Buffer[raceInt](2)))
			}
		}},
		{"retained, replayed to each new subscription", func(b *Broker) (func(int), func() (<-chan int, func())) {
			b.Retain[raceInt](Retention{Count: 8})
			return func(i int) { b.Publish(raceInt(i)) }, func() (<-chan int, func()) {
				return asIntChan(b.Subscribe(Buffer[raceInt](2), Replay[raceInt](Earliest())))
			}
		}},
		{"handler", func(b *Broker) (func(int), func() (<-chan int, func())) {
			return func(i int) { b.Publish(raceInt(i)) }, func() (<-chan int, func()) {
				out := make(chan int)
				close(out) // a handler has no channel of the test's: its stop waits for its worker
				stop := b.Handle(func(context.Context, raceInt) error { return nil }, Buffer[raceInt](2))
				return out, stop
			}
		}},
	}
}

// Cancels race publications on every path a publication takes: plain sends
// (to one subscription and to many), boxed sends, From sources, DropOldest
// and OnLoss (offerTo), retained types. A send after the cancel closed the
// channel panics; a cancel that returned with a publisher still inside would
// let it. The channel must be closed once cancel returns.
func TestCancelNeverRacesAPublicationOnAnyPath(t *testing.T) {
	d := 100 * time.Millisecond
	if testing.Short() {
		d = 40 * time.Millisecond
	}
	for _, p := range publishPaths() {
		t.Run(p.name, func(t *testing.T) {
			var b Broker
			publish, churn := p.build(&b)
			var stop atomic.Bool
			t.Cleanup(func() { stop.Store(true) }) // a failed test leaves no publisher running
			var wg sync.WaitGroup
			// More publishers than Ps, so that some are preempted in the
			// middle of a publication while a cancel runs.
			for w := range 2*runtime.GOMAXPROCS(0) + 1 {
				wg.Go(func() {
					for i := w; !stop.Load(); i++ {
						publish(i)
					}
				})
			}
			rounds := 0
			for start := time.Now(); rounds < 8 || time.Since(start) < d; rounds++ {
				ch, cancel := churn()
				if rounds%4 == 1 {
					time.Sleep(20 * time.Microsecond)
				}
				returnsWithin(t, 10*time.Second, "cancel", cancel)
				timeout := time.After(5 * time.Second)
			drain:
				for {
					select {
					case _, ok := <-ch:
						if !ok {
							break drain
						}
					case <-timeout:
						stop.Store(true)
						t.Fatalf("round %d: the channel was not closed 5 s after cancel returned", rounds)
					}
				}
			}
			stop.Store(true)
			wg.Wait()
			if err := b.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkDrained(t, b.table.Load().guard)
			t.Logf("%d cancels", rounds)
		})
	}
}

// Shutdown races publications on every path: nothing may be sent on a
// channel it closed, and every channel is closed once it returns.
func TestShutdownNeverRacesAPublicationOnAnyPath(t *testing.T) {
	d := 120 * time.Millisecond
	if testing.Short() {
		d = 50 * time.Millisecond
	}
	for _, p := range publishPaths() {
		t.Run(p.name, func(t *testing.T) {
			start := time.Now()
			drained, cut := 0, 0
			for r := 0; r < 2 || time.Since(start) < d; r++ {
				var b Broker
				publish, churn := p.build(&b)
				chs := make([]<-chan int, 0, 4)
				for range 3 {
					ch, _ := churn()
					chs = append(chs, ch)
				}
				var stop atomic.Bool
				t.Cleanup(func() { stop.Store(true) }) // a failed test leaves no publisher running
				var wg sync.WaitGroup
				for w := range 2 * runtime.GOMAXPROCS(0) {
					wg.Go(func() {
						for i := w; !stop.Load(); i++ {
							publish(i)
						}
					})
				}
				// The publishers here never stop. Where there are handlers,
				// they may keep a queue from ever being found empty twice in
				// a row: the drain is theirs to prolong (see Shutdown), and
				// only a context ends it, sealing at once. Either way the
				// seal races the publications, which is what is tested.
				b.mu.Lock()
				drains := len(b.handlers) > 0
				b.mu.Unlock()
				limit := 5 * time.Second
				if drains {
					limit = 100 * time.Millisecond
				}
				time.Sleep(time.Duration(r%4) * 50 * time.Microsecond)
				ctx, cancelCtx := context.WithTimeout(context.Background(), limit)
				began := time.Now()
				err := b.Shutdown(ctx)
				cancelCtx()
				switch {
				case err == nil:
					drained++
				case drains && errors.Is(err, context.DeadlineExceeded):
					cut++
					if late := time.Since(began) - limit; late > 5*time.Second {
						stop.Store(true)
						t.Fatalf("round %d: Shutdown returned %v after its context ended", r, late)
					}
				default:
					stop.Store(true)
					t.Fatalf("round %d: Shutdown: %v", r, err)
				}
				for i, ch := range chs {
					timeout := time.After(5 * time.Second)
				drain:
					for {
						select {
						case _, ok := <-ch:
							if !ok {
								break drain
							}
						case <-timeout:
							stop.Store(true)
							t.Fatalf("round %d: subscription %d not closed 5 s after Shutdown returned", r, i)
						}
					}
				}
				stop.Store(true)
				wg.Wait()
				checkDrained(t, b.table.Load().guard)
				if err != nil {
					// Cut short, the handlers discard what remains and end;
					// a later call waits for that and returns the same.
					returnsWithin(t, 5*time.Second, "Shutdown after the cut", func() {
						if again := b.Shutdown(context.Background()); again != err {
							t.Errorf("round %d: Shutdown after the cut: %v, want %v", r, again, err)
						}
					})
				}
			}
			t.Logf("%d drains ended, %d cut short by their contexts", drained, cut)
		})
	}
}

// Once a cancel has returned, the subscription's loss counts are final (see
// Broker.Watch): a publisher still counting a drop after that would make
// Watch report a count that later changes. Each case keeps the
// subscription's buffer full, with more publishers than Ps so that some are
// preempted in the middle of a publication, cancels it, reads its counts,
// then stops the publishers and reads them again.
func TestLossCountsAreFinalOnceCancelReturns(t *testing.T) {
	d := 600 * time.Millisecond
	if testing.Short() {
		d = 250 * time.Millisecond
	}
	cases := []struct {
		name string
		sub  func(b *Broker) (<-chan raceInt, func())
	}{
		{"the only subscription, full: no guard (countFull)", func(b *Broker) (<-chan raceInt, func()) {
			return b.Subscribe(Buffer[raceInt](1))
		}},
		{"beside one with room: counted inside the guard", func(b *Broker) (<-chan raceInt, func()) {
			b.Subscribe(Buffer[raceInt](0)) // unbuffered: has room for hasRoom, never takes
			return b.Subscribe(Buffer[raceInt](1))
		}},
		{"OnLoss (offerTo)", func(b *Broker) (<-chan raceInt, func()) {
			return b.Subscribe(Buffer[raceInt](1), OnLoss(func(Loss[raceInt]) {}))
		}},
		{"DropOldest (offerTo evicting)", func(b *Broker) (<-chan raceInt, func()) {
			return b.Subscribe(Buffer[raceInt](1), Overflow[raceInt](DropOldest))
		}},
		{"beside a boxed one (sendPlain)", func(b *Broker) (<-chan raceInt, func()) {
			b.Subscribe(Buffer[any](0))
			return b.Subscribe(Buffer[raceInt](1))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			changed, rounds := 0, 0
			var first string
			for start := time.Now(); rounds < 4 || time.Since(start) < d; rounds++ {
				r := rounds
				var b Broker
				ch, cancel := c.sub(&b)
				s := subOf(&b, ch)
				if s == nil {
					t.Fatal("the subscription was not found")
				}
				var stop atomic.Bool
				t.Cleanup(func() { stop.Store(true) }) // a failed test leaves no publisher running
				var wg sync.WaitGroup
				for w := range 4 * runtime.GOMAXPROCS(0) {
					wg.Go(func() {
						for i := w; !stop.Load(); i++ {
							b.Publish(raceInt(i))
						}
					})
				}
				time.Sleep(time.Duration(1+r%3) * 200 * time.Microsecond)
				returnsWithin(t, 10*time.Second, "cancel", cancel)
				atCancel := s.lost.load()
				time.Sleep(200 * time.Microsecond)
				stop.Store(true)
				wg.Wait()
				if later := s.lost.load(); later != atCancel {
					changed++
					if first == "" {
						first = fmt.Sprintf("round %d: %+v once cancel returned, %+v once the publishers stopped", r, atCancel, later)
					}
				}
			}
			if changed > 0 {
				t.Errorf("the counts changed after cancel returned in %d of %d rounds; first: %s", changed, rounds, first)
			}
		})
	}
}
