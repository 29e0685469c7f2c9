package topic_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// These tests fail by panicking (a send on a closed channel, a double close),
// by hanging (a deadlock: the runtime's detection or the test timeout), by
// a race report under -race, or by an explicit check. None of them measures
// time.

// iterations scales a loop count down under -short.
func iterations(n int) int {
	if testing.Short() {
		return max(n/10, 1)
	}
	return n
}

// raceTick is the concrete type the concurrency tests publish.
type raceTick struct{ N int }

// startPublishers starts n goroutines that publish, in a loop, a raceTick,
// an errCode through error, and a string, until stop is called; stop waits
// for them to return.
func startPublishers(b *topic.Broker, n int) (stop func()) {
	var wg sync.WaitGroup
	done := make(chan struct{})
	for g := range n {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				b.Publish(raceTick{N: i})
				b.Publish(error(errCode(g)))
				b.Publish(fmt.Sprint(i))
				// Publishers never block; yielding lets a goroutine they
				// woke by a delivery run before the time slice ends.
				runtime.Gosched()
			}
		})
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// drainClosed receives everything ch holds and reports whether ch is then
// closed. It never blocks.
func drainClosed[T any](ch <-chan T) bool {
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return true
			}
		default:
			return false
		}
	}
}

// subscribeAny makes a subscription of one of several kinds, chosen by i, so
// that a loop exercises every kind of route: a concrete type, any, an
// interface, a concrete From source, an interface From source; buffered and
// unbuffered. It returns the cancel function and a check that drains the
// channel and reports whether it is closed.
func subscribeAny(b *topic.Broker, i int) (cancel func(), closed func() bool) {
	n := i % 3
	switch i % 5 {
	case 0:
		ch, cancel := b.Subscribe(topic.Buffer[raceTick](n))
		return cancel, func() bool { return drainClosed(ch) }
	case 1:
		ch, cancel := b.Subscribe(topic.Buffer[any](n))
		return cancel, func() bool { return drainClosed(ch) }
	case 2:
		ch, cancel := b.Subscribe(topic.Buffer[error](n))
		return cancel, func() bool { return drainClosed(ch) }
	case 3:
		ch, cancel := b.Subscribe(
			topic.Buffer[string](n),
			topic.From(func(t raceTick) (string, bool) { return fmt.Sprint(t.N), t.N%2 == 0 }),
		)
		return cancel, func() bool { return drainClosed(ch) }
	default:
		ch, cancel := b.Subscribe(
			topic.Buffer[fmt.Stringer](n),
			topic.From(func(e error) (fmt.Stringer, bool) { return strLabel(e.Error()), true }),
		)
		return cancel, func() bool { return drainClosed(ch) }
	}
}

func TestCancelRacingPublishClosesTheChannel(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	stop := startPublishers(&b, 4)
	defer stop()

	for i := range iterations(3000) {
		cancel, closed := subscribeAny(&b, i)
		if i%2 == 0 {
			closed() // receive some values before cancelling
		}
		cancel()
		if !closed() {
			t.Fatalf("iteration %d: channel still open after cancel returned", i)
		}
	}
}

// A publication to many subscriptions takes a while to walk its route, which
// widens the window in which a cancel can race it: the cancelled channel,
// last on the route, must not be sent to once cancel has returned, although
// publishers already walking the route still list it.
func TestCancelDuringLongPublicationClosesTheChannel(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	for range 500 {
		// Unbuffered and never received from: every publication tries
		// every send, and none succeeds.
		_, cancel := b.Subscribe(topic.Buffer[raceTick](0))
		defer cancel()
	}
	stop := startPublishers(&b, 4)
	defer stop()

	for i := range iterations(2000) {
		ch, cancel := b.Subscribe(topic.Buffer[raceTick](0))
		cancel()
		if !drainClosed(ch) {
			t.Fatalf("iteration %d: channel still open after cancel returned", i)
		}
	}
}

// Several goroutines subscribe and cancel at once, racing each other as well
// as the publishers.
func TestConcurrentSubscribeAndCancelRacingPublish(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	stop := startPublishers(&b, 4)
	defer stop()

	var wg sync.WaitGroup
	var open atomic.Int64
	for g := range 4 {
		wg.Go(func() {
			for i := range iterations(1000) {
				cancel, closed := subscribeAny(&b, g+i)
				cancel()
				if !closed() {
					open.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := open.Load(); n != 0 {
		t.Errorf("%d channels still open after cancel returned", n)
	}
}

// A subscription registered while others are concurrently subscribing and
// cancelling is never lost: once Subscribe returns, the next publication
// reaches it.
func TestSubscribeRacingPublishIsNeverLost(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	stop := startPublishers(&b, 4) // raceTicks with N >= 0
	defer stop()

	var wg sync.WaitGroup
	var lost atomic.Int64
	for g := range 4 {
		wg.Go(func() {
			for i := range iterations(1000) {
				id := -1 - (g*1_000_000 + i) // never published by startPublishers
				ch, cancel := b.Subscribe(
					topic.From(func(t raceTick) (raceTick, bool) { return t, t.N == id }),
				)
				all, cancelAll := b.Subscribe(
					topic.From(func(t raceTick) (any, bool) { return t, t.N == id }),
					topic.From(func(v any) (any, bool) { return nil, false }),
				)
				b.Publish(raceTick{N: id})
				// Publish has returned, so the value is in both channels.
				if got := takeAll(ch); len(got) != 1 || got[0].N != id {
					lost.Add(1)
				}
				if got := takeAll(all); len(got) != 1 || got[0] != (raceTick{N: id}) {
					lost.Add(1)
				}
				cancel()
				cancelAll()
			}
		})
	}
	wg.Wait()
	if n := lost.Load(); n != 0 {
		t.Errorf("%d publications missed a subscription registered before them", n)
	}
}

// Long-lived subscriptions survive the concurrent churn of others of the
// same types: no cancel or subscribe drops them from a route.
func TestChurnLeavesOtherSubscriptionsRouted(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	type survivor struct {
		name string
		got  func() int
	}
	var survivors []survivor
	for i := range 10 {
		switch i % 3 {
		case 0:
			ch, cancel := b.Subscribe(topic.Buffer[raceTick](1))
			defer cancel()
			survivors = append(survivors, survivor{"raceTick", func() int { return len(takeAll(ch)) }})
		case 1:
			ch, cancel := b.Subscribe(topic.Buffer[error](1))
			defer cancel()
			survivors = append(survivors, survivor{"error", func() int { return len(takeAll(ch)) }})
		default:
			ch, cancel := b.Subscribe(
				topic.Buffer[int](1),
				topic.From(func(t raceTick) (int, bool) { return t.N, true }),
			)
			defer cancel()
			survivors = append(survivors, survivor{"From(raceTick)", func() int { return len(takeAll(ch)) }})
		}
	}

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range iterations(1000) {
				cancel, _ := subscribeAny(&b, g+i)
				b.Publish(raceTick{N: i})
				cancel()
			}
		})
	}
	wg.Wait()

	for _, s := range survivors {
		s.got() // empty the buffers the churn filled
	}
	b.Publish(raceTick{N: 1})
	b.Publish(error(errCode(1)))
	for i, s := range survivors {
		if n := s.got(); n != 1 {
			t.Errorf("survivor %d (%s) received %d values after the churn, want 1", i, s.name, n)
		}
	}
}

func TestConcurrentCancelOfTheSameSubscription(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	stop := startPublishers(&b, 2)
	defer stop()
	other, cancelOther := b.Subscribe(topic.Buffer[raceTick](1))
	defer cancelOther()

	for i := range iterations(500) {
		cancel, closed := subscribeAny(&b, i)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				<-start
				cancel()
				// Whichever call closed it, each returns after the close.
				if !closed() {
					t.Errorf("iteration %d: channel still open after a cancel returned", i)
				}
			})
		}
		close(start)
		wg.Wait()
	}

	stop()
	takeAll(other)
	b.Publish(raceTick{N: 1})
	wantReceived(t, "other subscription", other, raceTick{N: 1})
}

// A From function may cancel its own subscription; the value it then reports
// is not delivered, since nothing is sent after cancel returns.
func TestFromFunctionCancelsItsOwnSubscription(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	var cancel func()
	ch, cancel := b.Subscribe(
		topic.Buffer[int](4),
		topic.From(func(n int) (int, bool) {
			cancel()
			cancel() // still idempotent from inside
			return n, true
		}),
	)
	b.Publish(1)
	wantClosed(t, "self-cancelled", ch)
	b.Publish(2)

	// The same through an interface source, which is delivered boxed.
	var cancelErr func()
	errs, cancelErr := b.Subscribe(
		topic.Buffer[string](4),
		topic.From(func(e error) (string, bool) {
			cancelErr()
			return e.Error(), true
		}),
	)
	b.Publish(errCode(1))
	wantClosed(t, "self-cancelled through an interface source", errs)
}

// A From function cancels another subscription of the same publication, one
// that the publication would reach after it and one before it.
func TestFromFunctionCancelsAnotherSubscription(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"concrete", "any", "From"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var b topic.Broker
			subscribe := func() (func(), func() bool, func() []int) {
				switch kind {
				case "concrete":
					ch, cancel := b.Subscribe(topic.Buffer[int](4))
					return cancel, func() bool { return drainClosed(ch) }, func() []int { return takeAll(ch) }
				case "any":
					ch, cancel := b.Subscribe(topic.Buffer[any](4))
					return cancel, func() bool { return drainClosed(ch) }, func() []int {
						var ns []int
						for _, v := range takeAll(ch) {
							ns = append(ns, v.(int))
						}
						return ns
					}
				default:
					ch, cancel := b.Subscribe(
						topic.Buffer[string](4),
						topic.From(func(n int) (string, bool) { return fmt.Sprint(n), true }),
					)
					return cancel, func() bool { return drainClosed(ch) }, func() []int {
						var ns []int
						for _, s := range takeAll(ch) {
							var n int
							fmt.Sscan(s, &n)
							ns = append(ns, n)
						}
						return ns
					}
				}
			}
			cancelBefore, closedBefore, _ := subscribe()
			var victims []func()
			killer, cancelKiller := b.Subscribe(
				topic.Buffer[int](4),
				topic.From(func(n int) (int, bool) {
					for _, cancel := range victims {
						cancel()
					}
					return n, true
				}),
			)
			defer cancelKiller()
			cancelAfter, closedAfter, _ := subscribe()
			_, _, survivorGot := subscribe()
			victims = []func(){cancelBefore, cancelAfter}

			b.Publish(7)

			if !closedBefore() {
				t.Error("subscription before the From function: still open after its cancel returned")
			}
			if !closedAfter() {
				t.Error("subscription after the From function: still open after its cancel returned")
			}
			wantReceived(t, "the From subscription", killer, 7)
			if got := survivorGot(); !slices.Equal(got, []int{7}) {
				t.Errorf("untouched subscription received %v, want [7]", got)
			}
		})
	}
}

// A From function may publish, of the same type or another, and subscribe.
func TestFromFunctionPublishesAndSubscribes(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	labels, cancelLabels := b.Subscribe(topic.Buffer[strLabel](8))
	defer cancelLabels()
	var (
		subscribed []<-chan errCode
		cancels    []func()
	)
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	ch, cancel := b.Subscribe(
		topic.Buffer[int](8),
		topic.From(func(n int) (int, bool) {
			b.Publish(strLabel(fmt.Sprint("saw ", n)))
			if n > 0 {
				b.Publish(n - 1) // re-enters this very From function
			}
			c, cancel := b.Subscribe[errCode]()
			subscribed = append(subscribed, c)
			cancels = append(cancels, cancel)
			return n, true
		}),
	)
	defer cancel()

	b.Publish(3)

	got := takeAll(ch)
	slices.Sort(got) // nested publications overlap: their order is unspecified
	if !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("int received %v, want 0 to 3 in any order", got)
	}
	if n := len(takeAll(labels)); n != 4 {
		t.Errorf("strLabel received %d values published from From, want 4", n)
	}
	b.Publish(errCode(1))
	for i, c := range subscribed {
		wantReceived(t, fmt.Sprint("subscribed from From #", i), c, errCode(1))
	}
}

// A goroutine ranging over a subscription may publish, subscribe and cancel,
// its own subscription included, which ends the range.
func TestOperationsWhileRangingOverASubscription(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	ch, cancel := b.Subscribe[int]()
	labels, cancelLabels := b.Subscribe(topic.Buffer[strLabel](16))
	defer cancelLabels()

	b.Publish(0)
	var got []int
	for n := range ch {
		got = append(got, n)
		b.Publish(strLabel(fmt.Sprint(n)))
		_, cancelOther := b.Subscribe[int]()
		cancelOther()
		if n == 5 {
			cancel()
			continue
		}
		b.Publish(n + 1) // the buffer was just emptied: accepted
	}

	if !slices.Equal(got, []int{0, 1, 2, 3, 4, 5}) {
		t.Errorf("range received %v, want 0 to 5", got)
	}
	if n := len(takeAll(labels)); n != 6 {
		t.Errorf("strLabel received %d values, want 6", n)
	}
}

// The same while other goroutines publish: the ranging goroutine cancels
// its subscription after a number of values, and the range ends.
func TestRangeEndsWhenCancelledDuringConcurrentPublication(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	stop := startPublishers(&b, 4)
	defer stop()

	for i := range iterations(200) {
		ch, cancel := b.Subscribe(topic.Buffer[raceTick](i % 4))
		var seen int
		for range ch {
			seen++
			b.Publish(strLabel("ranging"))
			_, cancelOther := b.Subscribe[fmt.Stringer]()
			if seen == 3 {
				cancel()
			}
			cancelOther()
		}
	}
}
