package topic_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

type (
	srA  struct{ N int }
	srB  struct{ N int }
	srR  struct{ N int }
	srS0 struct{ N int }
	srS1 struct{ N int }
	srS2 struct{ N int }
	srS3 struct{ N int }
)

// A publication whose From function runs while Shutdown seals the broker
// (here the From function calls Shutdown itself, which is allowed) is
// delivered or counted: the subscription, closed meanwhile, counts it as
// Closed.
func TestAFromFunctionThatShutsDownHasItsValueCounted(t *testing.T) {
	var b topic.Broker
	var reported atomic.Int64
	ch, _ := b.Subscribe(topic.Name[srB]("b"), topic.Buffer[srB](4),
		topic.From(func(a srA) (srB, bool) {
			if err := b.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown = %v", err)
			}
			return srB(a), true
		}),
		topic.OnLoss(func(topic.Loss[srB]) { reported.Add(1) }))
	b.Publish(srA{1})
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
	kinds := map[string]func(b *topic.Broker) <-chan srB{
		"OnLoss": func(b *topic.Broker) <-chan srB {
			ch, _ := b.Subscribe(topic.Name[srB]("b"), topic.Buffer[srB](1<<16), topic.OnLoss(func(topic.Loss[srB]) {}))
			return ch
		},
		"plain": func(b *topic.Broker) <-chan srB {
			ch, _ := b.Subscribe(topic.Name[srB]("b"), topic.Buffer[srB](1<<16))
			return ch
		},
		"From any": func(b *topic.Broker) <-chan srB {
			ch, _ := b.Subscribe(topic.Name[srB]("b"), topic.Buffer[srB](1<<16),
				topic.From(func(x any) (srB, bool) { v, ok := x.(srB); return v, ok }))
			return ch
		},
		"DropOldest": func(b *topic.Broker) <-chan srB {
			ch, _ := b.Subscribe(topic.Name[srB]("b"), topic.Buffer[srB](1<<16), topic.Overflow[srB](topic.DropOldest))
			return ch
		},
		// A lone plain subscription of a retained type: its publications
		// take sendOrderedOne's path, and, sealed, the closed sink's.
		"retained, plain": func(b *topic.Broker) <-chan srB {
			b.Retain[srB](topic.Retention{Count: 4})
			ch, _ := b.Subscribe(topic.Name[srB]("b"), topic.Buffer[srB](1<<16))
			return ch
		},
		"retained, OnLoss": func(b *topic.Broker) <-chan srB {
			b.Retain[srB](topic.Retention{Count: 4})
			ch, _ := b.Subscribe(topic.Name[srB]("b"), topic.Buffer[srB](1<<16), topic.OnLoss(func(topic.Loss[srB]) {}))
			return ch
		},
	}
	for name, sub := range kinds {
		t.Run(name, func(t *testing.T) {
			bad := 0
			trials := 30
			if testing.Short() {
				trials = 10
			}
			for trial := range trials {
				var b topic.Broker
				ch := sub(&b)
				var published atomic.Int64
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						for i := range 4000 {
							b.Publish(srB{i})
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
				t.Errorf("%d of %d trials lost values silently", bad, trials)
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
		b.Retain[srR](topic.Retention{Count: n})
		for i := range n {
			b.Publish(srR{i})
		}
		got := make(chan (<-chan srR), 1)
		start := make(chan struct{})
		go func() {
			close(start)
			ch, _ := b.Subscribe(topic.Replay[srR](topic.Earliest()), topic.Buffer[srR](n+8), topic.Name[srR]("late"))
			got <- ch
		}()
		<-start
		time.Sleep(time.Duration(trial) * 50 * time.Microsecond)
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		ch := <-got
		b.Publish(srR{-1}) // after Shutdown: to be counted Closed, not delivered
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
		b.Retain[srR](topic.Retention{Count: n})
		for i := range n {
			b.Publish(srR{i})
		}
		start, registered := make(chan struct{}), make(chan struct{})
		go func() {
			close(start)
			b.Handle(func(context.Context, srR) error { return nil },
				topic.Replay[srR](topic.Earliest()), topic.Buffer[srR](n+8))
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
		b.Retain[srR](topic.Retention{Count: 8})
		b.Publish(srR{1})
		b.Publish(srR{2})
		var handled atomic.Int64
		var err error
		var waited time.Duration
		b.Handle(func(context.Context, srR) error { handled.Add(1); return nil },
			topic.Name[srR]("h"),
			topic.Replay[srR](topic.Earliest()),
			topic.From(func(r srR) (srR, bool) {
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
	b.Handle(func(context.Context, srA) error { return nil })
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
		b.Retain[topic.DeadLetter[srA]](topic.Retention{Count: 64})
		var calls atomic.Int64
		b.Handle(func(_ context.Context, a srA) error {
			if calls.Add(1) <= 6 {
				return errDeclined
			}
			return nil
		}, topic.Retry[srA](topic.RetryPolicy{Attempts: 1}), topic.Name[srA]("jobs"),
			topic.From(func(r topic.Record[topic.DeadLetter[srA]]) (srA, bool) { return r.Value.Value, true }))
		b.Publish(srA{7})
		synctest.Wait()
		if st := hStats(t, &b, "jobs"); st.Handler.DeadLettered != 1 {
			recs, _, _ := b.Read[topic.DeadLetter[srA]](0, 100)
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
			out, _ := b.Subscribe(topic.Buffer[srS3](n))
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
					b.Handle(func(_ context.Context, v srS0) error {
						sleep()
						inside(v.N)
						b.Publish(srS1(v))
						return nil
					}, topic.Buffer[srS0](n))
				},
				func() {
					var failed sync.Map
					b.Handle(func(_ context.Context, v srS1) error {
						sleep()
						if _, again := failed.LoadOrStore(v.N, true); !again && v.N%3 == 0 {
							return errDeclined
						}
						inside(v.N + 1)
						b.Publish(srS2(v))
						return nil
					}, topic.Buffer[srS1](n), topic.Retry[srS1](topic.RetryPolicy{Attempts: 3, Base: time.Duration(1+rand.IntN(5)) * time.Millisecond}))
				},
				func() {
					b.Handle(func(_ context.Context, v srS2) error {
						sleep()
						inside(v.N + 2)
						b.Publish(srS3(v))
						return nil
					}, topic.Buffer[srS2](n))
				},
			}
			rand.Shuffle(len(regs), func(i, j int) { regs[i], regs[j] = regs[j], regs[i] })
			for _, r := range regs {
				r()
			}
			for i := range n {
				b.Publish(srS0{i})
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
	stopB := b.Handle(func(context.Context, srB) error {
		close(inB)
		return b.Shutdown(context.Background())
	})
	b.Handle(func(context.Context, srA) error {
		<-inB
		stopB()
		return nil
	})
	b.Publish(srB{})
	b.Publish(srA{})
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
				_, c := b.Subscribe(topic.Buffer[srS3](8), topic.OnLoss(func(topic.Loss[srS3]) {}))
				cancels = append(cancels, c)
			}
			sleep := func() { time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond) }
			stops[0] = b.Handle(func(_ context.Context, v srS0) error {
				sleep()
				if v.N == 5 {
					_ = b.Shutdown(context.Background())
					stops[0]() // itself, inside the drain
				}
				b.Publish(srS1(v))
				return nil
			})
			stops[1] = b.Handle(func(_ context.Context, v srS1) error {
				sleep()
				if v.N == 9 {
					stops[2]()
				}
				b.Publish(srS2(v))
				return nil
			}, topic.DiscardOnStop[srS1]())
			stops[2] = b.Handle(func(_ context.Context, v srS2) error {
				sleep()
				b.Publish(srS3(v))
				return nil
			}, topic.Retry[srS2](topic.RetryPolicy{Attempts: 2, Base: time.Millisecond}))
			for i := range 20 {
				b.Publish(srS0{i})
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
			b.Publish(srS0{99})
		})
	}
}

// Replays racing cancel and Shutdown neither panic nor deliver after cancel
// returns.
func TestReplaysRacingCancelAndShutdownDoNotPanic(t *testing.T) {
	for trial := range 20 {
		var b topic.Broker
		b.Retain[srR](topic.Retention{Count: 4096})
		for i := range 4096 {
			b.Publish(srR{i})
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				ch, cancel := b.Subscribe(topic.Replay[srR](topic.Earliest()), topic.Buffer[srR](8192),
					topic.From(func(a srA) (srR, bool) { return srR(a), true }))
				go cancel()
				for range ch {
				}
			})
		}
		wg.Go(func() {
			for i := range 2000 {
				b.Publish(srR{i})
				b.Publish(srA{i})
			}
		})
		time.Sleep(time.Duration(trial) * 20 * time.Microsecond)
		_ = b.Shutdown(context.Background())
		wg.Wait()
	}
}

// A failing handler that re-drives its dead letters through a second queue
// (DropNewest or DropOldest), fed by outside publishers racing Shutdown,
// which may be cut short: every publication is handled or counted, and
// every loss counted is reported to OnLoss.
func TestTheRedriveQueueAccountsForEverything(t *testing.T) {
	for _, policy := range []topic.Policy{topic.DropNewest, topic.DropOldest} {
		for _, cut := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/cut=%v", policy, cut), func(t *testing.T) {
				bad := 0
				for trial := range 20 {
					var b topic.Broker
					var handled, reported atomic.Int64
					b.Handle(func(ctx context.Context, v valA) error {
						if v.N%4 == 0 {
							time.Sleep(20 * time.Microsecond)
						}
						if v.N%2 == 1 {
							return topic.Permanent(errDeclined)
						}
						handled.Add(1)
						return nil
					}, topic.Name[valA]("h"), topic.Buffer[valA](4), topic.Overflow[valA](policy),
						topic.Retry[valA](topic.RetryPolicy{Attempts: 2}),
						topic.From(func(d topic.DeadLetter[valA]) (valA, bool) { return d.Value, true }),
						topic.OnLoss(func(topic.Loss[valA]) { reported.Add(1) }))
					var published atomic.Int64
					var wg sync.WaitGroup
					for p := range 3 {
						wg.Go(func() {
							for i := range 3000 {
								b.Publish(valA{p*100000 + i})
								published.Add(1)
							}
						})
					}
					time.Sleep(time.Duration(trial%5) * 300 * time.Microsecond)
					ctx := context.Background()
					if cut {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, time.Duration(trial%4)*100*time.Microsecond)
						defer cancel()
					}
					err := b.Shutdown(ctx)
					if !cut && err != nil {
						t.Fatal(err)
					}
					wg.Wait()
					for b.Goroutines() != 0 {
						time.Sleep(time.Millisecond)
					}
					st := hStats(t, &b, "h")
					n := handled.Load() + int64(st.Lost.Total())
					if n != published.Load() || reported.Load() != int64(st.Lost.Total()) {
						bad++
						if bad <= 3 {
							t.Errorf("trial %d: published %d, handled %d, lost %+v (%d reported), dead-lettered %d, queued %d: %d unaccounted",
								trial, published.Load(), handled.Load(), st.Lost, reported.Load(), st.Handler.DeadLettered, st.Queued, published.Load()-n)
						}
					}
				}
				if bad > 0 {
					t.Errorf("%d of 20 trials", bad)
				}
			})
		}
	}
}

// A retained type published and appended by outside publishers racing
// Shutdown, to a handler replaying it, a channel subscription with OnLoss,
// a subscription to its records, and a From source of it: every
// publication is received, handled or counted by each.
func TestARetainedTypeRacingShutdownAccountsForEverything(t *testing.T) {
	bad := 0
	for trial := range 30 {
		var b topic.Broker
		b.Retain[valA](topic.Retention{Count: 64})
		const pre = 40
		for i := range pre {
			b.Publish(valA{i})
		}
		var handled atomic.Int64
		b.Handle(func(context.Context, valA) error { handled.Add(1); return nil },
			topic.Name[valA]("h"), topic.Buffer[valA](8), topic.Replay[valA](topic.Earliest()))
		ch, _ := b.Subscribe(topic.Name[valA]("ch"), topic.Buffer[valA](1<<15), topic.OnLoss(func(topic.Loss[valA]) {}))
		rec, _ := b.Subscribe(topic.Name[topic.Record[valA]]("rec"), topic.Buffer[topic.Record[valA]](1<<15), topic.Overflow[topic.Record[valA]](topic.DropOldest))
		from, _ := b.Subscribe(topic.Name[valB]("from"), topic.Buffer[valB](1<<15),
			topic.From(func(a valA) (valB, bool) { return valB(a), true }))
		var published atomic.Int64
		var wg sync.WaitGroup
		for p := range 3 {
			wg.Go(func() {
				for i := range 2000 {
					if i%2 == 0 {
						b.Append(valA{p*10000 + i})
					} else {
						b.Publish(valA{p*10000 + i})
					}
					published.Add(1)
				}
			})
		}
		time.Sleep(time.Duration(trial%6) * 200 * time.Microsecond)
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		live := published.Load()
		check := func(name string, got, want int64) {
			st := hStats(t, &b, name)
			if got+int64(st.Lost.Total()) != want {
				bad++
				if bad <= 5 {
					t.Errorf("trial %d: %s: want %d, got %d, lost %+v: %d unaccounted", trial, name, want, got, st.Lost, want-got-int64(st.Lost.Total()))
				}
			}
		}
		check("h", handled.Load(), live+pre)
		check("ch", int64(len(takeAll(ch))), live)
		check("rec", int64(len(takeAll(rec))), live)
		check("from", int64(len(takeAll(from))), live)
	}
	if bad > 0 {
		t.Errorf("%d unaccounted", bad)
	}
}

// The simplest case of the above: a publication of a retained type after
// Shutdown would have reached a subscription to its records, closed by
// Shutdown; it must be counted there as Closed and reported.
func TestARecordSubscriptionCountsPublicationsAfterShutdown(t *testing.T) {
	var b topic.Broker
	b.Retain[valA](topic.Retention{Count: 8})
	var reported atomic.Int64
	rec, _ := b.Subscribe(topic.Name[topic.Record[valA]]("rec"), topic.Buffer[topic.Record[valA]](8),
		topic.OnLoss(func(topic.Loss[topic.Record[valA]]) { reported.Add(1) }))
	b.Publish(valA{1})
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.Publish(valA{2})
	b.Append(valA{3})
	got := len(takeAll(rec))
	st := hStats(t, &b, "rec")
	if got != 1 || st.Lost.Closed != 2 || reported.Load() != 2 {
		t.Errorf("3 published, the last 2 after Shutdown: received %d, lost %+v, %d reported; want 1 received, 2 Closed and reported",
			got, st.Lost, reported.Load())
	}
}

// Lone plain subscriptions of a retained type and of its records, with a
// buffer that fills, while publishers race Shutdown: every publication is
// received, or counted once, Full or Closed, by each (Sent plus those
// equals what was published, and so does Matched); the log counts each
// publication once (Topics).
func TestLoneOrderedSubscriptionsCountEveryPublicationAcrossShutdown(t *testing.T) {
	const publishers, each = 4, 600
	trials := 40
	if testing.Short() {
		trials = 8
	}
	for trial := range trials {
		b := new(topic.Broker)
		b.Retain[gVal](topic.Retention{Count: 16})
		n := []int{0, 1, 7, 1 << 13}[trial%4]
		ch, _ := b.Subscribe(topic.Name[gVal]("values"), topic.Buffer[gVal](n))
		rch, _ := b.Subscribe(topic.Name[topic.Record[gVal]]("records"), topic.Buffer[topic.Record[gVal]](n))
		var got, rgot uint64
		var order loneOrder
		var readers sync.WaitGroup
		readers.Go(func() {
			for v := range ch {
				order.see(v)
				got++
			}
		})
		readers.Go(func() {
			for range rch {
				rgot++
			}
		})
		var half sync.WaitGroup
		half.Add(publishers)
		var pubs sync.WaitGroup
		for p := range publishers {
			pubs.Go(func() {
				for i := range each {
					if i == (trial*37)%each {
						half.Done()
					}
					b.Publish(gVal{P: p, Seq: i})
				}
			})
		}
		half.Wait()
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		pubs.Wait()
		readers.Wait()
		if order.bad != "" {
			t.Errorf("trial %d: %s", trial, order.bad)
		}
		const total = publishers * each
		for _, st := range b.Subscriptions() {
			received := got
			if st.Name == "records" {
				received = rgot
			}
			l := st.Lost
			if st.Sent != received || st.Sent+l.Full+l.Closed != total || l.Total() != l.Full+l.Closed || st.Matched != total {
				t.Errorf("trial %d (buffer %d): %s received %d of %d, counted Sent %d, Matched %d, lost %+v",
					trial, n, st.Name, received, total, st.Sent, st.Matched, l)
			}
		}
		for _, tp := range b.Topics() {
			if tp.Type == reflect.TypeFor[gVal]() && tp.Published != total {
				t.Errorf("trial %d: Topics counts %d publications of gVal, want %d", trial, tp.Published, total)
			}
		}
	}
}
