package topic_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

type (
	wEarly struct{ N int }
	wSlow  struct{ N int }
	wJob   struct{ N int }
	wGone  struct{ N int }
)

// A collector collects what a function of the broker's (a Watch's, a
// TimeCalls') is given, from any goroutine.
type collector[T any] struct {
	mu  sync.Mutex
	got []T
}

func (c *collector[T]) add(x T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, x)
}

// take returns what was collected since the last take.
func (c *collector[T]) take() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.got
	c.got = nil
	return got
}

// incidents collects what a Watch reports.
type incidents = collector[topic.Incident]

// counts returns is without where each subscription was made (checked
// apart), for a comparison of the counts alone.
func counts(is []topic.Incident) []topic.Incident {
	for i := range is {
		is[i].Made = ""
	}
	return is
}

// An incident says where its subscription was made, as SubscriptionStats
// does, and its log line ends with it.
func TestAnIncidentSaysWhereItsSubscriptionWasMade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		_, _, line, _ := runtime.Caller(0)
		_, cancel := b.Subscribe(topic.Name[wEarly]("made"))
		defer cancel()
		var got incidents
		stop := b.Watch(time.Second, got.add)
		defer stop()
		b.Publish(wEarly{1})
		b.Publish(wEarly{2}) // lost: the buffer holds one
		time.Sleep(time.Second)
		synctest.Wait()
		is := got.take()
		want := "github.com/seedaa7df82c/topic_test/watch_test.go:" + strconv.Itoa(line+1)
		if len(is) != 1 || is[0].Made != want {
			t.Fatalf("incidents %+v, want one made at %s", is, want)
		}
		var out strings.Builder
		slog.New(slog.NewTextHandler(&out, nil)).Warn("lost", "incident", is[0])
		if !strings.HasSuffix(strings.TrimSpace(out.String()), " incident.made="+want) {
			t.Errorf("log line %q does not end with incident.made=%s", out.String(), want)
		}
	})
}

func TestWatchReportsEveryLossOnceAnInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		_, cancelEarly := b.Subscribe(topic.Name[wEarly]("early"), topic.Buffer[wEarly](1))
		defer cancelEarly()
		for i := range 4 {
			b.Publish(wEarly{i}) // 3 lost before Watch: not reported
		}
		var got incidents
		stop := b.Watch(time.Second, got.add)
		defer stop()
		_, cancelSlow := b.Subscribe(topic.Name[wSlow]("slow"), topic.Buffer[wSlow](2), topic.Overflow[wSlow](topic.DropOldest))
		defer cancelSlow()
		for i := range 100_002 {
			b.Publish(wSlow{i})
		}
		b.Publish(wEarly{9})
		time.Sleep(time.Second)
		synctest.Wait()
		want := []topic.Incident{
			{Type: reflect.TypeFor[wEarly](), Name: "early", Lost: topic.Lost{Full: 1}, Matched: 1}, // the one since Watch
			{Type: reflect.TypeFor[wSlow](), Name: "slow", Lost: topic.Lost{Evicted: 100_000}, Matched: 100_002},
		}
		if is := counts(got.take()); !reflect.DeepEqual(is, want) {
			t.Fatalf("first interval:\n got %+v\nwant %+v", is, want)
		}
		// Nothing lost: nothing reported.
		time.Sleep(time.Second)
		synctest.Wait()
		if is := got.take(); len(is) != 0 {
			t.Fatalf("an interval without losses reported %+v", is)
		}
		// A million lost in an interval is one incident.
		for i := range 1_000_000 {
			b.Publish(wSlow{i})
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if is := got.take(); len(is) != 1 || is[0].Lost != (topic.Lost{Evicted: 1_000_000}) {
			t.Fatalf("a million lost in one interval: %+v", is)
		}
	})
}

func TestWatchReportsRetriesDeadLettersAndEndedSubscriptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		var got incidents
		stop := b.Watch(time.Second, got.add)
		defer stop()
		stopJobs := b.Handle(func(ctx context.Context, j wJob) error { return errors.New("no") },
			topic.Name[wJob]("jobs"), topic.Retry[wJob](topic.RetryPolicy{Attempts: 3}))
		defer stopJobs()
		b.Publish(wJob{1})
		b.Publish(wJob{2})
		if err := b.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		// A subscription that loses, then ends, before the interval ends.
		_, cancel := b.Subscribe(topic.Name[wGone]("gone"), topic.Buffer[wGone](0))
		b.Publish(wGone{1})
		b.Publish(wGone{2})
		cancel()
		time.Sleep(time.Second)
		synctest.Wait()
		want := []topic.Incident{
			{Type: reflect.TypeFor[wGone](), Name: "gone", Lost: topic.Lost{Full: 2}, Matched: 2, Ended: true},
			{Type: reflect.TypeFor[wJob](), Name: "jobs", Matched: 2, Retried: 4, DeadLettered: 2},
		}
		if is := counts(got.take()); !reflect.DeepEqual(is, want) {
			t.Fatalf("got  %+v\nwant %+v", is, want)
		}
	})
}

// After Shutdown the watch reports the final counts, each subscription as
// ended, and ends by itself; stop then returns at once, and again.
func TestWatchEndsAfterShutdownWithTheFinalCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		var got incidents
		stop := b.Watch(time.Hour, got.add)
		_, cancel := b.Subscribe(topic.Name[wSlow]("slow"), topic.Buffer[wSlow](1))
		defer cancel()
		for i := range 3 {
			b.Publish(wSlow{i})
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		stop() // waits for the final scan
		stop()
		want := []topic.Incident{{Type: reflect.TypeFor[wSlow](), Name: "slow", Lost: topic.Lost{Full: 2}, Matched: 3, Ended: true}}
		if is := counts(got.take()); !reflect.DeepEqual(is, want) {
			t.Fatalf("got  %+v\nwant %+v", is, want)
		}
		b.Publish(wSlow{9}) // counted as Closed, not reported: the watch has ended
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if is := got.take(); len(is) != 0 {
			t.Fatalf("reported after it ended: %+v", is)
		}
	})
}

// stop called from f returns at once, and f is not called again; stop
// called from elsewhere returns once f is no longer called.
func TestWatchStopFromItsFunction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		for _, n := range []string{"a", "b", "c"} {
			_, cancel := b.Subscribe(topic.Name[wSlow](n), topic.Buffer[wSlow](0))
			defer cancel()
		}
		var calls int
		var stop func()
		stop = b.Watch(time.Second, func(topic.Incident) {
			calls++
			stop()
		})
		b.Publish(wSlow{1})
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if calls != 1 {
			t.Fatalf("f called %d times after it called stop, want 1", calls)
		}
		stop()
	})
}

func TestWatchBadInput(t *testing.T) {
	var b topic.Broker
	for name, f := range map[string]func(){
		"a zero interval":     func() { b.Watch(0, func(topic.Incident) {}) },
		"a negative interval": func() { b.Watch(-time.Second, func(topic.Incident) {}) },
		"a nil function":      func() { b.Watch(time.Second, nil) },
	} {
		if msg, panicked := panicMessage(f); !panicked || !strings.HasPrefix(msg, "topic: ") {
			t.Errorf("Watch with %s: panicked %t with %q, want a topic: panic", name, panicked, msg)
		}
	}
}

// Concurrent publishers, subscriptions coming and going and a watch: every
// value lost is reported once, in some interval, by the subscription that
// lost it, also when a publisher counts it as the subscription is being
// cancelled.
func TestWatchCountsEveryLossUnderChurn(t *testing.T) {
	var b topic.Broker
	var mu sync.Mutex
	var reported uint64
	byName := map[string]uint64{}
	var exactBy sync.Map
	stop := b.Watch(time.Millisecond, func(i topic.Incident) {
		mu.Lock()
		reported += i.Lost.Full
		byName[i.Name] += i.Lost.Total()
		mu.Unlock()
	})
	var wg sync.WaitGroup
	var exact atomic.Uint64 // every loss, told to each subscription's OnLoss
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				name := fmt.Sprint(g, "-", i)
				var mine atomic.Uint64
				exactBy.Store(name, &mine)
				_, cancel := b.Subscribe(topic.Name[wSlow](name), topic.Buffer[wSlow](0),
					topic.OnLoss(func(l topic.Loss[wSlow]) {
						exact.Add(1)
						mine.Add(1)
						if l.Cause != topic.Full {
							t.Errorf("%s lost a value to %v, want full", name, l.Cause)
						}
					}))
				for range 10 {
					b.Publish(wSlow{i})
				}
				cancel()
			}
		})
	}
	wg.Wait()
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop()
	exactBy.Range(func(k, v any) bool {
		if n := v.(*atomic.Uint64).Load(); n != byName[k.(string)] {
			t.Errorf("%s: OnLoss %d, reported %d", k, n, byName[k.(string)])
		}
		return true
	})
	if reported != exact.Load() || reported < 800*10 {
		t.Fatalf("reported %d values lost, OnLoss told of %d (at least %d)", reported, exact.Load(), 800*10)
	}
}

type (
	handledJob  struct{ N int }
	slowJob     struct{ N int }
	watchEvict  struct{ N int }
	watchCtx    struct{ N int }
	watchLog    struct{ N int }
	watchPumped struct{ N int }
	watchSrc    struct{ N int }
	watchDst    struct{ N int }
	watchChurn  struct{ N int }
	watchOther  struct{ N int }
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
func TestWatchReportsTheRetriesOfAStoppedHandlerOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		got := newTally()
		stopW := b.Watch(100*time.Millisecond, got.add)
		stopH := b.Handle(func(ctx context.Context, j handledJob) error { return errors.New("no") },
			topic.Name[handledJob]("jobs"), topic.Buffer[handledJob](8),
			topic.Retry[handledJob](topic.RetryPolicy{Attempts: 3, Base: time.Second}))
		for i := range 3 {
			b.Publish(handledJob{i})
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
func TestWatchDoesNotReportAStoppedHandlerTwiceAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		got := newTally()
		stopW := b.Watch(500*time.Millisecond, got.add)
		stopH := b.Handle(func(ctx context.Context, j slowJob) error {
			time.Sleep(10 * time.Second)
			return nil
		}, topic.Name[slowJob]("slow"), topic.Buffer[slowJob](1))
		b.Publish(slowJob{0})
		synctest.Wait() // in hand
		for i := 1; i <= 4; i++ {
			b.Publish(slowJob{i}) // 1 queued, 3 Full
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
func TestWatchReportsWhatACutShutdownDiscards(t *testing.T) {
	for run := range 30 {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			got := newTally()
			stopW := b.Watch(time.Hour, got.add)
			b.Handle(func(ctx context.Context, j handledJob) error {
				<-ctx.Done()
				return ctx.Err()
			}, topic.Name[handledJob]("jobs"), topic.Buffer[handledJob](16))
			for i := range 10 {
				b.Publish(handledJob{i})
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
func TestWatchReportsAChannelFollowerClosedByShutdown(t *testing.T) {
	for run := range 30 {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			b.Retain[watchPumped](topic.Retention{Count: 16})
			got := newTally()
			stopW := b.Watch(time.Hour, got.add)
			_, cancel := b.Subscribe(topic.Follow[watchPumped](), topic.Buffer[watchPumped](0), topic.Name[watchPumped]("pumped"))
			defer cancel()
			b.Publish(watchPumped{1})
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
func TestWatchReportsAFollowersSkippedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[watchLog](topic.Retention{Count: 2})
		got := newTally()
		stopW := b.Watch(time.Second, got.add)
		defer stopW()
		f := b.Follow[watchLog](topic.Name[watchLog]("reader"), topic.Replay[watchLog](topic.Earliest()))
		for i := range 10 {
			b.Publish(watchLog{i})
		}
		buf := make([]topic.Record[watchLog], 16)
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
func TestWatchReportsEvictionsAndFromLossesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		got := newTally()
		stopW := b.Watch(time.Second, got.add)
		defer stopW()
		_, cancelE := b.Subscribe(topic.Name[watchEvict]("evict"), topic.Buffer[watchEvict](3), topic.Overflow[watchEvict](topic.DropOldest))
		_, cancelF := b.Subscribe(topic.Name[watchDst]("from"), topic.Buffer[watchDst](1),
			topic.From(func(s watchSrc) (watchDst, bool) { return watchDst(s), s.N%2 == 0 }))
		for i := range 20 {
			b.Publish(watchEvict{i})
			b.Publish(watchSrc{i}) // 10 pass, 1 buffered, 9 Full
		}
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		for i := range 5 {
			b.Publish(watchEvict{i})
			b.Publish(watchSrc{2 * i})
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
func TestWatchReportsASubscriptionCancelledByItsContextOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		got := newTally()
		stopW := b.Watch(time.Second, got.add)
		defer stopW()
		ctx, cancel := context.WithCancel(context.Background())
		b.Subscribe(topic.Name[watchCtx]("ctx"), topic.Buffer[watchCtx](0), topic.Context[watchCtx](ctx))
		for i := range 5 {
			b.Publish(watchCtx{i})
		}
		cancel()
		synctest.Wait()
		b.Publish(watchCtx{9}) // no subscription any more
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
func TestWatchStopFromAnotherWatchDoesNotDeadlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		_, cancel := b.Subscribe(topic.Name[slowJob]("a"), topic.Buffer[slowJob](0))
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
			b.Publish(slowJob{1})
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
func TestWatchFunctionMayCallWatchAndShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		_, cancel := b.Subscribe(topic.Name[slowJob]("a"), topic.Buffer[slowJob](0))
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
		b.Publish(slowJob{1})
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
func TestWatchOnAZeroBrokerOrAfterShutdownEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		stop := b.Watch(time.Second, func(i topic.Incident) { t.Errorf("f called: %+v", i) })
		time.Sleep(3 * time.Second)
		stop()
		stop()
	})
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		_, cancel := b.Subscribe(topic.Name[slowJob]("a"), topic.Buffer[slowJob](0))
		defer cancel()
		b.Publish(slowJob{1})
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int32
		b.Watch(time.Second, func(i topic.Incident) { calls.Add(1) }) // never stopped: must end by itself
		b.Publish(slowJob{2})                                         // Closed, after the drain
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
func TestAWatchStoppedFromItsFunctionInTheFinalScanIsNotCalledAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		for _, n := range []string{"a", "b", "c", "d"} {
			_, cancel := b.Subscribe(topic.Name[slowJob](n), topic.Buffer[slowJob](0))
			defer cancel()
		}
		var calls atomic.Int32
		var stop func()
		stop = b.Watch(time.Hour, func(topic.Incident) {
			if calls.Add(1) == 2 {
				stop()
			}
		})
		b.Publish(slowJob{1})
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
func TestWatchReportsEveryLossOnceWhenShutdownCutsIntoChurn(t *testing.T) {
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
						_, cancel = b.Subscribe(topic.Name[watchChurn](name), topic.Buffer[watchChurn](2), topic.Overflow[watchChurn](topic.DropOldest),
							topic.OnLoss(func(l topic.Loss[watchChurn]) { onLoss(l.Cause) }))
					case 1:
						_, cancel = b.Subscribe(topic.Name[watchChurn](name), topic.Buffer[watchChurn](0),
							topic.OnLoss(func(l topic.Loss[watchChurn]) { onLoss(l.Cause) }))
					case 2:
						_, cancel = b.Subscribe(topic.Name[watchOther](name), topic.Buffer[watchOther](1),
							topic.From(func(c watchChurn) (watchOther, bool) { return watchOther(c), true }),
							topic.OnLoss(func(l topic.Loss[watchOther]) { onLoss(l.Cause) }))
					}
					for k := range 10 {
						b.Publish(watchChurn{k})
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
						b.Publish(watchChurn{-1})
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

// A handler stopped with DiscardOnStop discards its queue on its own
// goroutine after the cancel of its subscription: a scan at that moment (the
// tick falls on the instant of the stop) must not lose the Discarded counts.
func TestWatchKeepsTheDiscardedCountsOfADiscardOnStopHandler(t *testing.T) {
	for run := range 30 {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			got := newTally()
			stopW := b.Watch(time.Second, got.add)
			var discarded atomic.Uint64
			stopH := b.Handle(func(ctx context.Context, j handledJob) error {
				<-ctx.Done()
				return nil
			}, topic.Name[handledJob]("jobs"), topic.Buffer[handledJob](16), topic.DiscardOnStop[handledJob](),
				topic.OnLoss(func(l topic.Loss[handledJob]) {
					if l.Cause == topic.Discarded {
						discarded.Add(1)
					}
				}))
			for i := range 10 {
				b.Publish(handledJob{i})
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

// Every loss is logged with log/slog as a readable group, and the retries
// apart, so that an alert on loss never fires for a retry. The interval is
// an hour here, and the incidents come when stop reports what was not
// reported yet, once the handler has settled, so that the output is the
// same each run.
func ExampleBroker_Watch() {
	type Order struct{ ID int }
	type Mail struct{ To string }

	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // no time, for the example's output
			}
			return a
		},
	}))

	var b topic.Broker
	stop := b.Watch(time.Hour, func(i topic.Incident) {
		if i.Lossy() {
			logger.Warn("topic: values lost", "incident", i)
		} else if i.Retried > 0 {
			logger.Info("topic: values retried", "incident", i)
		}
	})
	defer stop()

	_, cancel := b.Subscribe(topic.Name[Order]("billing"), topic.Buffer[Order](2))
	defer cancel()
	for i := range 5 {
		b.Publish(Order{ID: i})
	}
	failed := false
	b.Handle(func(context.Context, Mail) error {
		if !failed {
			failed = true
			return errors.New("mail server busy") // the second attempt succeeds
		}
		return nil
	}, topic.Name[Mail]("mailer"), topic.Retry[Mail](topic.RetryPolicy{Attempts: 3, Base: time.Millisecond}))
	b.Publish(Mail{To: "ann@example.com"})

	if err := b.Settle(context.Background()); err != nil { // the mail sent, at its second attempt
		panic(err)
	}
	stop() // reports what was not reported yet, then returns
	// Output:
	// level=INFO msg="topic: values retried" incident.type=topic_test.Mail incident.name=mailer incident.matched=1 incident.retried=1 incident.made=github.com/seedaa7df82c/topic_test/watch_test.go:876
	// level=WARN msg="topic: values lost" incident.type=topic_test.Order incident.name=billing incident.full=3 incident.matched=5 incident.made=github.com/seedaa7df82c/topic_test/watch_test.go:870
}

// Lossy tells a loss (or a dead letter) from a retry that succeeded.
func ExampleIncident_Lossy() {
	retried := topic.Incident{Name: "mailer", Retried: 3}
	lost := topic.Incident{Name: "billing", Lost: topic.Lost{Full: 2}}
	dead := topic.Incident{Name: "payments", Retried: 2, DeadLettered: 1}
	fmt.Println(retried.Lossy(), lost.Lossy(), dead.Lossy())
	// Output:
	// false true true
}

// An Incident is a group for log/slog: its type, name and the counts that
// are not zero.
func ExampleIncident_LogValue() {
	i := topic.Incident{Type: reflect.TypeFor[int](), Name: "n", Lost: topic.Lost{Evicted: 7}, Retried: 2}
	fmt.Println(i.LogValue())
	// Output:
	// [type=int name=n evicted=7 retried=2]
}

// An Incident counts what one subscription lost in one interval; a program
// may total them, alert on them, or log them.
func ExampleIncident() {
	type Tick struct{ N int }

	var b topic.Broker
	var total topic.Lost
	stop := b.Watch(time.Hour, func(i topic.Incident) {
		total.Full += i.Lost.Full
		total.Evicted += i.Lost.Evicted
	})
	_, cancel1 := b.Subscribe(topic.Name[Tick]("gauge"), topic.Buffer[Tick](1), topic.Overflow[Tick](topic.DropOldest))
	_, cancel2 := b.Subscribe(topic.Name[Tick]("ticker"), topic.Buffer[Tick](3))
	for i := range 10 {
		b.Publish(Tick{N: i})
	}
	cancel1()
	cancel2()
	stop() // reports what was not reported yet
	fmt.Printf("full %d, evicted %d\n", total.Full, total.Evicted)
	// Output:
	// full 7, evicted 9
}
