package topic_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
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

// incidents collects what a Watch reports.
type incidents struct {
	mu sync.Mutex
	is []topic.Incident
}

func (c *incidents) add(i topic.Incident) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.is = append(c.is, i)
}

// take returns what was collected since the last take.
func (c *incidents) take() []topic.Incident {
	c.mu.Lock()
	defer c.mu.Unlock()
	is := c.is
	c.is = nil
	return is
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
			{Type: reflect.TypeFor[wEarly](), Name: "early", Lost: topic.Lost{Full: 1}},
			{Type: reflect.TypeFor[wSlow](), Name: "slow", Lost: topic.Lost{Evicted: 100_000}},
		}
		if is := got.take(); !reflect.DeepEqual(is, want) {
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
			{Type: reflect.TypeFor[wGone](), Name: "gone", Lost: topic.Lost{Full: 2}, Ended: true},
			{Type: reflect.TypeFor[wJob](), Name: "jobs", Retried: 4, DeadLettered: 2},
		}
		if is := got.take(); !reflect.DeepEqual(is, want) {
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
		want := []topic.Incident{{Type: reflect.TypeFor[wSlow](), Name: "slow", Lost: topic.Lost{Full: 2}, Ended: true}}
		if is := got.take(); !reflect.DeepEqual(is, want) {
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

// One line logs every incident with log/slog, as a readable group. The
// interval is an hour here, and the incidents come with Shutdown's final
// counts, so that the output is the same each run.
func ExampleBroker_Watch() {
	type Order struct{ ID int }

	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // no time, for the example's output
			}
			return a
		},
	}))

	var b topic.Broker
	stop := b.Watch(time.Hour, func(i topic.Incident) { logger.Warn("topic: values lost", "incident", i) })
	defer stop()

	_, cancel := b.Subscribe(topic.Name[Order]("billing"), topic.Buffer[Order](2))
	defer cancel()
	for i := range 5 {
		b.Publish(Order{ID: i})
	}
	b.Shutdown(context.Background())
	stop() // returns once the final counts are reported
	// Output:
	// level=WARN msg="topic: values lost" incident.type=topic_test.Order incident.name=billing incident.full=3 incident.ended=true
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
