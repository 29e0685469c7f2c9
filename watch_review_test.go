package topic_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

// Adversarial review of Broker.Watch and of Shutdown with an ended context.

type (
	rvJob    struct{ N int }
	rvSlow   struct{ N int }
	rvEvict  struct{ N int }
	rvCtx    struct{ N int }
	rvLog    struct{ N int }
	rvPumped struct{ N int }
	rvSrc    struct{ N int }
	rvDst    struct{ N int }
	rvChurn  struct{ N int }
	rvOther  struct{ N int }
)

// tally sums what a Watch reports, by name.
type tally struct {
	mu      sync.Mutex
	lost    map[string]topic.Lost
	retried map[string]uint64
	dead    map[string]uint64
	ended   map[string]int
	n       int
}

func newTally() *tally {
	return &tally{lost: map[string]topic.Lost{}, retried: map[string]uint64{}, dead: map[string]uint64{}, ended: map[string]int{}}
}

func (t *tally) add(i topic.Incident) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	l := t.lost[i.Name]
	l.Full += i.Lost.Full
	l.Evicted += i.Lost.Evicted
	l.Failed += i.Lost.Failed
	l.Errored += i.Lost.Errored
	l.Discarded += i.Lost.Discarded
	l.Closed += i.Lost.Closed
	l.Skipped += i.Lost.Skipped
	t.lost[i.Name] = l
	t.retried[i.Name] += i.Retried
	t.dead[i.Name] += i.DeadLettered
	if i.Ended {
		t.ended[i.Name]++
	}
}

func (t *tally) get(name string) (topic.Lost, uint64, uint64, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lost[name], t.retried[name], t.dead[name], t.ended[name]
}

func statsOf(b *topic.Broker, name string) (topic.SubscriptionStats, bool) {
	for _, st := range b.Subscriptions() {
		if st.Name == name {
			return st, true
		}
	}
	return topic.SubscriptionStats{}, false
}

// A handler stopped (draining) while it still has values to retry: the
// watch may scan between the cancel of its subscription and the end of its
// worker. Every retry and dead letter must still be reported, once.
func TestReviewWatchStoppedHandlerRetriesAfterEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		got := newTally()
		stopW := b.Watch(100*time.Millisecond, got.add)
		stopH := b.Handle(func(ctx context.Context, j rvJob) error { return errors.New("no") },
			topic.Name[rvJob]("jobs"), topic.Buffer[rvJob](8),
			topic.Retry[rvJob](topic.RetryPolicy{Attempts: 3, Base: time.Second}))
		for i := range 3 {
			b.Publish(rvJob{i})
		}
		synctest.Wait()
		stopped := make(chan struct{})
		start := time.Now()
		go func() { stopH(); close(stopped) }() // drains: 6 retries, 3 dead letters, over ~9s
		<-stopped
		if d := time.Since(start); d < 2*time.Second {
			t.Fatalf("stop returned after %v: the retries did not happen", d)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		stopW()
		_, retried, dead, ended := got.get("jobs")
		if retried != 6 || dead != 3 || ended != 1 {
			t.Errorf("reported retried %d, dead-lettered %d, ended %d times; want 6, 3, 1", retried, dead, ended)
		}
	})
}

// A stopped handler still handling its queue when Shutdown begins is in
// Shutdown's final list: a watch that already reported it as Ended must not
// report its counts a second time.
func TestReviewWatchStoppedHandlerNotReportedTwiceAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		got := newTally()
		stopW := b.Watch(500*time.Millisecond, got.add)
		stopH := b.Handle(func(ctx context.Context, j rvSlow) error {
			time.Sleep(10 * time.Second)
			return nil
		}, topic.Name[rvSlow]("slow"), topic.Buffer[rvSlow](1))
		b.Publish(rvSlow{0})
		synctest.Wait() // in hand
		for i := 1; i <= 4; i++ {
			b.Publish(rvSlow{i}) // 1 queued, 3 Full
		}
		go stopH()
		time.Sleep(time.Second) // the watch sees it ended
		synctest.Wait()
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		stopW()
		lost, _, _, ended := got.get("slow")
		if lost.Full != 3 || ended != 1 {
			t.Errorf("reported Full %d, ended %d times; want 3, 1", lost.Full, ended)
		}
	})
}

// Shutdown with an ended context: the handlers discard what remains, after
// Shutdown has returned. The watch, left to end by itself (stop ends it at
// once, not waiting for workers), reports those Discarded counts too.
func TestReviewWatchShutdownCutReportsDiscarded(t *testing.T) {
	for run := range 30 {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			got := newTally()
			stopW := b.Watch(time.Hour, got.add)
			b.Handle(func(ctx context.Context, j rvJob) error {
				<-ctx.Done()
				return ctx.Err()
			}, topic.Name[rvJob]("jobs"), topic.Buffer[rvJob](16))
			for i := range 10 {
				b.Publish(rvJob{i})
			}
			synctest.Wait()
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := b.Shutdown(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("run %d: Shutdown with an ended context returned %v", run, err)
			}
			synctest.Wait() // the handler has ended, and the watch with the final counts
			stopW()
			st, ok := statsOf(&b, "jobs")
			if !ok {
				t.Fatalf("run %d: no final stats for jobs", run)
			}
			lost, _, _, _ := got.get("jobs")
			if lost.Discarded != st.Lost.Discarded || lost.Errored != st.Lost.Errored {
				t.Errorf("run %d: reported discarded %d errored %d; final counts discarded %d errored %d",
					run, lost.Discarded, lost.Errored, st.Lost.Discarded, st.Lost.Errored)
			}
		})
	}
}

// A channel follower whose pump holds a value when Shutdown seals it counts
// that value Closed; Shutdown waits for the pump, for the final counts. The
// watch's final scan must include it.
func TestReviewWatchChannelFollowerClosedByShutdown(t *testing.T) {
	for run := range 30 {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			b.Retain[rvPumped](topic.Retention{Count: 16})
			got := newTally()
			stopW := b.Watch(time.Hour, got.add)
			_, cancel := b.Subscribe(topic.Follow[rvPumped](), topic.Buffer[rvPumped](0), topic.Name[rvPumped]("pumped"))
			defer cancel()
			b.Publish(rvPumped{1})
			synctest.Wait() // the pump holds it, waiting for a receiver
			if err := b.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			stopW()
			st, ok := statsOf(&b, "pumped")
			if !ok {
				t.Fatalf("run %d: no final stats", run)
			}
			lost, _, _, ended := got.get("pumped")
			if lost != st.Lost || st.Lost.Closed != 1 || ended != 1 {
				t.Errorf("run %d: reported %+v (ended %d); final counts %+v", run, lost, ended, st.Lost)
			}
		})
	}
}

// A follower skipping trimmed values: Skipped reported once, with Ended on
// Close.
func TestReviewWatchFollowerSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[rvLog](topic.Retention{Count: 2})
		got := newTally()
		stopW := b.Watch(time.Second, got.add)
		defer stopW()
		f := b.Follow[rvLog](topic.Name[rvLog]("reader"), topic.Replay[rvLog](topic.Earliest()))
		for i := range 10 {
			b.Publish(rvLog{i})
		}
		buf := make([]topic.Record[rvLog], 16)
		n := f.Read(buf)
		if n != 2 || buf[0].Skipped != 8 {
			t.Fatalf("read %d, skipped %d", n, buf[0].Skipped)
		}
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		f.Close()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		lost, _, _, ended := got.get("reader")
		// Ended comes with an incident only if something changed in the
		// interval of the end: none here.
		if lost.Skipped != 8 || ended > 1 {
			t.Errorf("reported Skipped %d, ended %d; want 8, at most 1", lost.Skipped, ended)
		}
	})
}

// DropOldest evictions and a From subscription's Full losses, reported once,
// with the subscription cancelled in the same interval.
func TestReviewWatchEvictionsAndFrom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		got := newTally()
		stopW := b.Watch(time.Second, got.add)
		defer stopW()
		_, cancelE := b.Subscribe(topic.Name[rvEvict]("evict"), topic.Buffer[rvEvict](3), topic.Overflow[rvEvict](topic.DropOldest))
		_, cancelF := b.Subscribe(topic.Name[rvDst]("from"), topic.Buffer[rvDst](1),
			topic.From(func(s rvSrc) (rvDst, bool) { return rvDst(s), s.N%2 == 0 }))
		for i := range 20 {
			b.Publish(rvEvict{i})
			b.Publish(rvSrc{i}) // 10 pass, 1 buffered, 9 Full
		}
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		for i := range 5 {
			b.Publish(rvEvict{i})
			b.Publish(rvSrc{2 * i})
		}
		cancelE()
		cancelF()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		le, _, _, ee := got.get("evict")
		lf, _, _, ef := got.get("from")
		if le != (topic.Lost{Evicted: 22}) || ee != 1 {
			t.Errorf("evict: reported %+v, ended %d; want Evicted 22, 1", le, ee)
		}
		if lf != (topic.Lost{Full: 14}) || ef != 1 {
			t.Errorf("from: reported %+v, ended %d; want Full 14, 1", lf, ef)
		}
	})
}

// A subscription cancelled by its Context option: its last counts reported
// once, as Ended, and nothing after.
func TestReviewWatchContextCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		got := newTally()
		stopW := b.Watch(time.Second, got.add)
		defer stopW()
		ctx, cancel := context.WithCancel(context.Background())
		b.Subscribe(topic.Name[rvCtx]("ctx"), topic.Buffer[rvCtx](0), topic.Context[rvCtx](ctx))
		for i := range 5 {
			b.Publish(rvCtx{i})
		}
		cancel()
		synctest.Wait()
		b.Publish(rvCtx{9}) // no subscription any more
		time.Sleep(5 * time.Second)
		synctest.Wait()
		lost, _, _, ended := got.get("ctx")
		if lost != (topic.Lost{Full: 5}) || ended != 1 {
			t.Errorf("reported %+v, ended %d; want Full 5, 1", lost, ended)
		}
	})
}

// Stop of one watch called from another watch's f: no deadlock, and the
// stopped watch's f is not called after its stop returned.
func TestReviewWatchStopFromAnotherWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		_, cancel := b.Subscribe(topic.Name[rvSlow]("a"), topic.Buffer[rvSlow](0))
		defer cancel()
		var stoppedB atomic.Bool
		var afterStop atomic.Int32
		stopB := b.Watch(time.Second, func(topic.Incident) {
			if stoppedB.Load() {
				afterStop.Add(1)
			}
			time.Sleep(100 * time.Millisecond)
		})
		var once sync.Once
		stopA := b.Watch(time.Second, func(topic.Incident) {
			once.Do(func() {
				stopB()
				stoppedB.Store(true)
			})
		})
		for range 3 {
			b.Publish(rvSlow{1})
			time.Sleep(time.Second)
		}
		synctest.Wait()
		stopA()
		stopB()
		if n := afterStop.Load(); n != 0 {
			t.Errorf("f called %d times after its stop returned", n)
		}
	})
}

// f calls Watch and Shutdown: neither deadlocks, both watches end by
// themselves after Shutdown (synctest fails on a goroutine left blocked).
func TestReviewWatchFromFCallsWatchAndShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		_, cancel := b.Subscribe(topic.Name[rvSlow]("a"), topic.Buffer[rvSlow](0))
		defer cancel()
		var inner func()
		var errs = make(chan error, 1)
		var once sync.Once
		b.Watch(time.Second, func(topic.Incident) {
			once.Do(func() {
				inner = b.Watch(time.Second, func(topic.Incident) {})
				errs <- b.Shutdown(context.Background())
			})
		})
		b.Publish(rvSlow{1})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("Shutdown from f did not return")
		}
		inner()
	})
}

// Watch on a zero Broker never used, and Watch after Shutdown: stop returns,
// the watch's goroutine ends (after Shutdown: by itself), f never called.
func TestReviewWatchZeroAndAfterShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		stop := b.Watch(time.Second, func(i topic.Incident) { t.Errorf("f called: %+v", i) })
		time.Sleep(3 * time.Second)
		stop()
		stop()
	})
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		_, cancel := b.Subscribe(topic.Name[rvSlow]("a"), topic.Buffer[rvSlow](0))
		defer cancel()
		b.Publish(rvSlow{1})
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int32
		b.Watch(time.Second, func(i topic.Incident) { calls.Add(1) }) // never stopped: must end by itself
		b.Publish(rvSlow{2})                                          // Closed, after the drain
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if n := calls.Load(); n > 1 {
			t.Errorf("f called %d times after Shutdown", n)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker // zero, never used, shut down while watched, watch never stopped
		b.Watch(time.Second, func(topic.Incident) {})
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// Shutdown from f while the watch is mid-list, then stop from f in the final
// scan: f not called again, no deadlock.
func TestReviewWatchStopFromFDuringFinalScan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		for _, n := range []string{"a", "b", "c", "d"} {
			_, cancel := b.Subscribe(topic.Name[rvSlow](n), topic.Buffer[rvSlow](0))
			defer cancel()
		}
		var calls atomic.Int32
		var stop func()
		stop = b.Watch(time.Hour, func(topic.Incident) {
			if calls.Add(1) == 2 {
				stop()
			}
		})
		b.Publish(rvSlow{1})
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		stop()
		if n := calls.Load(); n != 2 {
			t.Errorf("f called %d times, want 2", n)
		}
	})
}

// Real time, -race: subscriptions (DropOldest, Full, From) churn with
// publishers while a watch with a short interval runs, then Shutdown cuts
// in while they churn. Every Full and Evicted loss is reported once; f is
// never called after stop returned.
func TestReviewWatchShutdownWhileChurning(t *testing.T) {
	for run := range 5 {
		var b topic.Broker
		got := newTally()
		var stopped atomic.Bool
		var late atomic.Int32
		stopW := b.Watch(time.Millisecond, func(i topic.Incident) {
			if stopped.Load() {
				late.Add(1)
			}
			got.add(i)
		})
		type counts struct{ full, evicted atomic.Uint64 }
		var exact sync.Map
		var wg sync.WaitGroup
		quit := make(chan struct{})
		for g := range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-quit:
						return
					default:
					}
					name := fmt.Sprint(run, "-", g, "-", i)
					c := &counts{}
					exact.Store(name, c)
					onLoss := func(cause topic.Cause) {
						switch cause {
						case topic.Full:
							c.full.Add(1)
						case topic.Evicted:
							c.evicted.Add(1)
						}
					}
					var cancel func()
					switch g % 3 {
					case 0:
						_, cancel = b.Subscribe(topic.Name[rvChurn](name), topic.Buffer[rvChurn](2), topic.Overflow[rvChurn](topic.DropOldest),
							topic.OnLoss(func(l topic.Loss[rvChurn]) { onLoss(l.Cause) }))
					case 1:
						_, cancel = b.Subscribe(topic.Name[rvChurn](name), topic.Buffer[rvChurn](0),
							topic.OnLoss(func(l topic.Loss[rvChurn]) { onLoss(l.Cause) }))
					case 2:
						_, cancel = b.Subscribe(topic.Name[rvOther](name), topic.Buffer[rvOther](1),
							topic.From(func(c rvChurn) (rvOther, bool) { return rvOther(c), true }),
							topic.OnLoss(func(l topic.Loss[rvOther]) { onLoss(l.Cause) }))
					}
					for k := range 10 {
						b.Publish(rvChurn{k})
					}
					if i%2 == 0 {
						cancel()
					}
				}
			})
		}
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-quit:
						return
					default:
						b.Publish(rvChurn{-1})
					}
				}
			})
		}
		time.Sleep(30 * time.Millisecond)
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		close(quit)
		wg.Wait()
		stopW()
		stopped.Store(true)
		time.Sleep(5 * time.Millisecond)
		if n := late.Load(); n != 0 {
			t.Errorf("run %d: f called %d times after stop returned", run, n)
		}
		bad := 0
		exact.Range(func(k, v any) bool {
			c := v.(*counts)
			lost, _, _, ended := got.get(k.(string))
			if lost.Full != c.full.Load() || lost.Evicted != c.evicted.Load() || ended > 1 {
				if bad++; bad <= 5 {
					t.Errorf("run %d: %s: reported Full %d Evicted %d ended %d; OnLoss Full %d Evicted %d",
						run, k, lost.Full, lost.Evicted, ended, c.full.Load(), c.evicted.Load())
				}
			}
			return true
		})
		if bad > 0 {
			t.Errorf("run %d: %d subscriptions misreported", run, bad)
		}
	}
}

// Shutdown returns ctx's error when ctx has ended before the call, whatever
// the handlers are doing (idle, none, busy), and nil with a live context.
func TestReviewShutdownEndedContext(t *testing.T) {
	for run := range 50 {
		for _, kind := range []string{"none", "idle", "busy", "deadline"} {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				switch kind {
				case "idle", "deadline":
					b.Handle(func(ctx context.Context, j rvJob) error { return nil })
					b.Publish(rvJob{1})
					synctest.Wait()
				case "busy":
					b.Handle(func(ctx context.Context, j rvJob) error { <-ctx.Done(); return nil })
					b.Publish(rvJob{1})
					synctest.Wait()
				}
				var ctx context.Context
				var cancel context.CancelFunc
				want := context.Canceled
				if kind == "deadline" {
					ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
					time.Sleep(2 * time.Millisecond)
					want = context.DeadlineExceeded
				} else {
					ctx, cancel = context.WithCancel(context.Background())
					cancel()
				}
				defer cancel()
				if err := b.Shutdown(ctx); !errors.Is(err, want) {
					t.Errorf("run %d, %s: Shutdown with an ended context returned %v, want %v", run, kind, err, want)
				}
				// A later call, with a live context, returns the outcome of the one drain.
				if err := b.Shutdown(context.Background()); !errors.Is(err, want) {
					t.Errorf("run %d, %s: a later Shutdown returned %v, want the drain's %v", run, kind, err, want)
				}
			})
		}
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			b.Handle(func(ctx context.Context, j rvJob) error { return nil })
			b.Publish(rvJob{1})
			synctest.Wait()
			if err := b.Shutdown(context.Background()); err != nil {
				t.Errorf("run %d: Shutdown with a live context returned %v", run, err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := b.Shutdown(ctx); err != nil {
				t.Errorf("run %d: a later Shutdown with an ended context returned %v, want the drain's nil", run, err)
			}
		})
	}
}

// Shutdown called from a handler's function with an ended context returns
// that context's error.
func TestReviewShutdownEndedContextFromHandler(t *testing.T) {
	for run := range 30 {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			errs := make(chan error, 1)
			b.Handle(func(_ context.Context, j rvJob) error {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				errs <- b.Shutdown(ctx)
				return nil
			})
			b.Handle(func(ctx context.Context, j rvSlow) error { return nil })
			b.Publish(rvJob{1})
			synctest.Wait()
			if err := <-errs; !errors.Is(err, context.Canceled) {
				t.Errorf("run %d: Shutdown from a handler with an ended context returned %v", run, err)
			}
			if err := b.Shutdown(context.Background()); !errors.Is(err, context.Canceled) {
				t.Errorf("run %d: a later Shutdown returned %v, want the drain's Canceled", run, err)
			}
		})
	}
}

// A handler stopped with DiscardOnStop discards its queue on its own
// goroutine after the cancel of its subscription: a scan at that moment (the
// tick falls on the instant of the stop) must not lose the Discarded counts.
func TestReviewWatchDiscardOnStopHandler(t *testing.T) {
	for run := range 30 {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			got := newTally()
			stopW := b.Watch(time.Second, got.add)
			var discarded atomic.Uint64
			stopH := b.Handle(func(ctx context.Context, j rvJob) error {
				<-ctx.Done()
				return nil
			}, topic.Name[rvJob]("jobs"), topic.Buffer[rvJob](16), topic.DiscardOnStop[rvJob](),
				topic.OnLoss(func(l topic.Loss[rvJob]) {
					if l.Cause == topic.Discarded {
						discarded.Add(1)
					}
				}))
			for i := range 10 {
				b.Publish(rvJob{i})
			}
			time.Sleep(time.Second) // wakes with the watch's tick
			stopH()
			time.Sleep(3 * time.Second)
			synctest.Wait()
			stopW()
			lost, _, _, ended := got.get("jobs")
			if lost.Discarded != discarded.Load() || ended > 1 {
				t.Errorf("run %d: reported Discarded %d (ended %d), OnLoss told of %d", run, lost.Discarded, ended, discarded.Load())
			}
		})
	}
}
