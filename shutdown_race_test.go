package topic_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

type (
	rvA  struct{ N int }
	rvB  struct{ N int }
	rvR  struct{ N int }
	rvS0 struct{ N int }
	rvS1 struct{ N int }
	rvS2 struct{ N int }
	rvS3 struct{ N int }
)

// A publication whose From function runs while Shutdown seals the broker
// (here the From function calls Shutdown itself, which is allowed) is
// delivered or counted: the subscription, closed meanwhile, counts it as
// Closed.
func TestAFromFunctionThatShutsDownHasItsValueCounted(t *testing.T) {
	var b topic.Broker
	var reported atomic.Int64
	ch, _ := b.Subscribe(topic.Name[rvB]("b"), topic.Buffer[rvB](4),
		topic.From(func(a rvA) (rvB, bool) {
			if err := b.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown = %v", err)
			}
			return rvB(a), true
		}),
		topic.OnLoss(func(topic.Loss[rvB]) { reported.Add(1) }))
	b.Publish(rvA{1})
	got := takeAll(ch)
	st := hStats(t, &b, "b")
	if len(got) == 0 && st.Lost.Total() == 0 && reported.Load() == 0 {
		t.Errorf("the publication was neither delivered (%v) nor counted (%+v) nor reported (%d)", got, st.Lost, reported.Load())
	}
}

// Outside publishers racing Shutdown, to a subscription delivered outside
// the guard (OnLoss, DropOldest, From): every publication must end up
// received or counted.
func TestPublicationsRacingShutdownAreReceivedOrCounted(t *testing.T) {
	kinds := map[string]func(b *topic.Broker) <-chan rvB{
		"OnLoss": func(b *topic.Broker) <-chan rvB {
			ch, _ := b.Subscribe(topic.Name[rvB]("b"), topic.Buffer[rvB](1<<16), topic.OnLoss(func(topic.Loss[rvB]) {}))
			return ch
		},
		"plain": func(b *topic.Broker) <-chan rvB {
			ch, _ := b.Subscribe(topic.Name[rvB]("b"), topic.Buffer[rvB](1<<16))
			return ch
		},
		"From any": func(b *topic.Broker) <-chan rvB {
			ch, _ := b.Subscribe(topic.Name[rvB]("b"), topic.Buffer[rvB](1<<16),
				topic.From(func(x any) (rvB, bool) { v, ok := x.(rvB); return v, ok }))
			return ch
		},
		"DropOldest": func(b *topic.Broker) <-chan rvB {
			ch, _ := b.Subscribe(topic.Name[rvB]("b"), topic.Buffer[rvB](1<<16), topic.Overflow[rvB](topic.DropOldest))
			return ch
		},
		"retained, OnLoss": func(b *topic.Broker) <-chan rvB {
			b.Retain[rvB](topic.Retention{Count: 4})
			ch, _ := b.Subscribe(topic.Name[rvB]("b"), topic.Buffer[rvB](1<<16), topic.OnLoss(func(topic.Loss[rvB]) {}))
			return ch
		},
	}
	for name, sub := range kinds {
		t.Run(name, func(t *testing.T) {
			bad := 0
			for trial := range 30 {
				var b topic.Broker
				ch := sub(&b)
				var published atomic.Int64
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						for i := range 4000 {
							b.Publish(rvB{i})
							published.Add(1)
						}
					})
				}
				time.Sleep(time.Duration(trial%5) * 200 * time.Microsecond)
				if err := b.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
				wg.Wait()
				n := int64(len(takeAll(ch)))
				st := hStats(t, &b, "b")
				if n+int64(st.Lost.Total()) != published.Load() {
					bad++
					if bad <= 3 {
						t.Errorf("trial %d: published %d, received %d, counted %+v: %d lost silently",
							trial, published.Load(), n, st.Lost, published.Load()-n-int64(st.Lost.Total()))
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of 30 trials lost values silently", bad)
			}
		})
	}
}

// A Subscribe with Replay whose replay is under way when Shutdown seals,
// and so not yet routed for its type: the seal closes it all the same, and
// the replay leaves it closed.
func TestAReplayRacingShutdownIsClosedByIt(t *testing.T) {
	const n = 1 << 15
	hits := 0
	for trial := range 20 {
		var b topic.Broker
		b.Retain[rvR](topic.Retention{Count: n})
		for i := range n {
			b.Publish(rvR{i})
		}
		got := make(chan (<-chan rvR), 1)
		start := make(chan struct{})
		go func() {
			close(start)
			ch, _ := b.Subscribe(topic.Replay[rvR](topic.Earliest()), topic.Buffer[rvR](n+8), topic.Name[rvR]("late"))
			got <- ch
		}()
		<-start
		time.Sleep(time.Duration(trial) * 50 * time.Microsecond)
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		ch := <-got
		b.Publish(rvR{-1}) // after Shutdown: to be counted Closed, not delivered
		vals := takeAll(ch)
		closed := false
		select {
		case _, ok := <-ch:
			closed = !ok
		default:
		}
		if !closed {
			hits++
			delivered := len(vals) > 0 && vals[len(vals)-1].N == -1
			if hits <= 3 {
				t.Errorf("trial %d: channel still open after Shutdown; received %d values, the one published after Shutdown delivered: %v; in the final snapshot: %v",
					trial, len(vals), delivered, hListed(&b, "late"))
			}
		}
	}
}

// The same race with a handler and a Shutdown cut short: the handler's
// queue is closed, its worker ends, and a later Shutdown returns at once.
func TestAHandlerReplayingAsShutdownIsCutShortEnds(t *testing.T) {
	const n = 1 << 15
	hits := 0
	for trial := range 20 {
		var b topic.Broker
		b.Retain[rvR](topic.Retention{Count: n})
		for i := range n {
			b.Publish(rvR{i})
		}
		start, registered := make(chan struct{}), make(chan struct{})
		go func() {
			close(start)
			b.Handle(func(context.Context, rvR) error { return nil },
				topic.Replay[rvR](topic.Earliest()), topic.Buffer[rvR](n+8))
			close(registered)
		}()
		<-start
		time.Sleep(time.Duration(trial) * 50 * time.Microsecond)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = b.Shutdown(ctx)
		<-registered
		ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
		err := b.Shutdown(ctx2)
		cancel2()
		if errors.Is(err, context.DeadlineExceeded) {
			hits++
			if hits <= 3 {
				t.Errorf("trial %d: a later Shutdown, the broker idle, waited 2s and returned %v; %d goroutines of the broker",
					trial, err, b.Goroutines())
			}
		}
	}
}

// Shutdown from the From function of a handler's replay, run on the
// goroutine of Handle, does not wait for the handler's worker (started
// before the replay), and the backlog is handled or counted.
func TestShutdownFromTheReplayOfAHandlerDoesNotWaitForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[rvR](topic.Retention{Count: 8})
		b.Publish(rvR{1})
		b.Publish(rvR{2})
		var handled atomic.Int64
		var err error
		var waited time.Duration
		b.Handle(func(context.Context, rvR) error { handled.Add(1); return nil },
			topic.Name[rvR]("h"),
			topic.Replay[rvR](topic.Earliest()),
			topic.From(func(r rvR) (rvR, bool) {
				if r.N == 1 {
					ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
					defer cancel()
					t0 := time.Now()
					err = b.Shutdown(ctx)
					waited = time.Since(t0)
				}
				return r, true
			}))
		synctest.Wait()
		if err != nil || waited > 0 {
			t.Errorf("Shutdown from the replay's From function returned %v after %v, the broker idle", err, waited)
		}
		st := hStats(t, &b, "h")
		if h := handled.Load(); h+int64(st.Lost.Total()) != 2 {
			t.Errorf("replayed 2 values: handled %d, counted lost %+v", h, st.Lost)
		}
	})
}

// A later Shutdown returns the outcome of the one drain, nil, even if its
// own context has ended by then.
func TestALaterShutdownReturnsTheDrainsOutcome(t *testing.T) {
	var b topic.Broker
	b.Handle(func(context.Context, rvA) error { return nil })
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	bad := 0
	for range 100 {
		if err := b.Shutdown(ctx); err != nil {
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of 100 later calls returned an error although the drain ended with nil", bad)
	}
}

// Dead letters of a retained type re-driven through their records are
// dead-lettered once: a record of a dead letter is a dead letter.
func TestRedriveThroughRecordsOfDeadLettersDoesNotLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[topic.DeadLetter[rvA]](topic.Retention{Count: 64})
		var calls atomic.Int64
		b.Handle(func(_ context.Context, a rvA) error {
			if calls.Add(1) <= 6 {
				return errDeclined
			}
			return nil
		}, topic.Retry[rvA](topic.RetryPolicy{Attempts: 1}), topic.Name[rvA]("jobs"),
			topic.From(func(r topic.Record[topic.DeadLetter[rvA]]) (rvA, bool) { return r.Value.Value, true }))
		b.Publish(rvA{7})
		synctest.Wait()
		if st := hStats(t, &b, "jobs"); st.Handler.DeadLettered != 1 {
			recs, _, _ := b.Read[topic.DeadLetter[rvA]](0, 100)
			t.Errorf("one value dead-lettered %d times (%d dead letters kept), want once", st.Handler.DeadLettered, len(recs))
		}
		_ = b.Shutdown(context.Background())
	})
}

// A pipeline of handlers, registered in random order, some calling
// Shutdown from inside, one retrying, with room for every value: every
// value arrives at the end, and nothing is lost.
func TestPipelinesDrainWithShutdownsFromInside(t *testing.T) {
	for trial := range 40 {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			const n = 100
			out, _ := b.Subscribe(topic.Buffer[rvS3](n))
			sleep := func() { time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond) }
			inside := func(v int) {
				if v%37 == trial {
					if err := b.Shutdown(context.Background()); err != nil {
						t.Errorf("Shutdown inside = %v", err)
					}
				}
			}
			regs := []func(){
				func() {
					b.Handle(func(_ context.Context, v rvS0) error {
						sleep()
						inside(v.N)
						b.Publish(rvS1(v))
						return nil
					}, topic.Buffer[rvS0](n))
				},
				func() {
					var failed sync.Map
					b.Handle(func(_ context.Context, v rvS1) error {
						sleep()
						if _, again := failed.LoadOrStore(v.N, true); !again && v.N%3 == 0 {
							return errDeclined
						}
						inside(v.N + 1)
						b.Publish(rvS2(v))
						return nil
					}, topic.Buffer[rvS1](n), topic.Retry[rvS1](topic.RetryPolicy{Attempts: 3, Base: time.Duration(1+rand.IntN(5)) * time.Millisecond}))
				},
				func() {
					b.Handle(func(_ context.Context, v rvS2) error {
						sleep()
						inside(v.N + 2)
						b.Publish(rvS3(v))
						return nil
					}, topic.Buffer[rvS2](n))
				},
			}
			rand.Shuffle(len(regs), func(i, j int) { regs[i], regs[j] = regs[j], regs[i] })
			for _, r := range regs {
				r()
			}
			for i := range n {
				b.Publish(rvS0{i})
			}
			if err := b.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			var got []int
			for v := range out {
				got = append(got, v.N)
			}
			slices.Sort(got)
			var lost uint64
			for _, st := range b.Subscriptions() {
				lost += st.Lost.Total()
			}
			if len(got) != n || lost > 0 {
				t.Errorf("trial %d: %d of %d values reached the end; %+v", trial, len(got), n, b.Subscriptions())
			}
			if g := b.Goroutines(); g != 0 {
				t.Errorf("%d goroutines after Shutdown", g)
			}
		})
	}
}

// Handler A's function stops handler B while B's function is inside
// Shutdown: A's stop is parked like a Shutdown from inside, so B's Shutdown
// returns, B ends, and so does A's stop.
func TestAHandlerStoppingAnotherThatIsInsideShutdownDoesNotHang(t *testing.T) {
	var b topic.Broker
	inB := make(chan struct{})
	stopB := b.Handle(func(context.Context, rvB) error {
		close(inB)
		return b.Shutdown(context.Background())
	})
	b.Handle(func(context.Context, rvA) error {
		<-inB
		stopB()
		return nil
	})
	b.Publish(rvB{})
	b.Publish(rvA{})
	done := make(chan error, 1)
	go func() { done <- b.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Shutdown = %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Errorf("Shutdown hung: A waits in stop(B), B waits in Shutdown for A")
	}
}

// Handlers stopped from outside, from inside, and stopping themselves after
// a Shutdown from inside, while Shutdown drains, with a context that may
// end; cancels of channel subscriptions racing the seal: no goroutine is
// left.
func TestStopsAndCancelsDuringTheDrainLeaveNothingBehind(t *testing.T) {
	for trial := range 30 {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			var stops [3]func()
			var cancels []func()
			for range 4 {
				_, c := b.Subscribe(topic.Buffer[rvS3](8), topic.OnLoss(func(topic.Loss[rvS3]) {}))
				cancels = append(cancels, c)
			}
			sleep := func() { time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond) }
			stops[0] = b.Handle(func(_ context.Context, v rvS0) error {
				sleep()
				if v.N == 5 {
					_ = b.Shutdown(context.Background())
					stops[0]() // itself, inside the drain
				}
				b.Publish(rvS1(v))
				return nil
			})
			stops[1] = b.Handle(func(_ context.Context, v rvS1) error {
				sleep()
				if v.N == 9 {
					stops[2]()
				}
				b.Publish(rvS2(v))
				return nil
			}, topic.DiscardOnStop[rvS1]())
			stops[2] = b.Handle(func(_ context.Context, v rvS2) error {
				sleep()
				b.Publish(rvS3(v))
				return nil
			}, topic.Retry[rvS2](topic.RetryPolicy{Attempts: 2, Base: time.Millisecond}))
			for i := range 20 {
				b.Publish(rvS0{i})
			}
			var wg sync.WaitGroup
			wg.Go(func() {
				sleep()
				stops[1]()
			})
			for _, c := range cancels {
				wg.Go(func() { sleep(); c() })
			}
			ctx := context.Background()
			if trial%3 == 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Duration(rand.IntN(3000))*time.Microsecond)
				defer cancel()
			}
			_ = b.Shutdown(ctx)
			wg.Wait()
			if err := b.Shutdown(context.Background()); err != nil && trial%3 != 0 {
				t.Errorf("later Shutdown = %v", err)
			}
			if g := b.Goroutines(); g != 0 {
				t.Errorf("trial %d: %d goroutines after Shutdown", trial, g)
			}
			b.Publish(rvS0{99})
		})
	}
}

// Replays racing cancel and Shutdown neither panic nor deliver after cancel
// returns.
func TestReplaysRacingCancelAndShutdownDoNotPanic(t *testing.T) {
	for trial := range 20 {
		var b topic.Broker
		b.Retain[rvR](topic.Retention{Count: 4096})
		for i := range 4096 {
			b.Publish(rvR{i})
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				ch, cancel := b.Subscribe(topic.Replay[rvR](topic.Earliest()), topic.Buffer[rvR](8192),
					topic.From(func(a rvA) (rvR, bool) { return rvR(a), true }))
				go cancel()
				for range ch {
				}
			})
		}
		wg.Go(func() {
			for i := range 2000 {
				b.Publish(rvR{i})
				b.Publish(rvA{i})
			}
		})
		time.Sleep(time.Duration(trial) * 20 * time.Microsecond)
		_ = b.Shutdown(context.Background())
		wg.Wait()
	}
}
