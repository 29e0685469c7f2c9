package topic_test

// Tests of the clock of retained types (see Retention): one reading per
// tick, shared by the publications of the tick.

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

// clockKeyed is a retained type of the clock tests.
type clockKeyed struct{ K, N int }

// The age bound is checked against the log's own clock: a value just
// published is never expired, even with an Age below a tick.
func TestClockAgeBelowATickKeepsAValueJustPublished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[retainTick](topic.Retention{Count: 100, Age: 500 * time.Microsecond})
		b.Append(retainTick{0})
		time.Sleep(900 * time.Microsecond)
		off, _ := b.Append(retainTick{1})
		recs, _, skipped := b.Read[retainTick](off, 1)
		if len(recs) != 1 {
			t.Errorf("value just appended at offset %d (Age 500µs): Read gives %v, skipped %d; want it", off, recs, skipped)
		}
	})
}

var clockPauses = []time.Duration{0, 1, time.Microsecond, 999 * time.Microsecond, time.Millisecond,
	time.Millisecond + 1, 2*time.Millisecond - 1, 49 * time.Millisecond, 50 * time.Millisecond,
	50*time.Millisecond + 1, 51 * time.Millisecond, 52 * time.Millisecond, 100 * time.Millisecond}

// Random schedules of publishers across tick and idle boundaries, ring and
// keyed logs: every record within [publication-tick, publication], and
// non-decreasing in offset order.
func TestClockRandomSchedulesKeepTimesWithinATick(t *testing.T) {
	for seed := range uint64(60) {
		for _, keyed := range []bool{false, true} {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				var b topic.Broker
				if keyed {
					b.RetainLatest[clockKeyed](func(v clockKeyed) int { return v.N }, topic.Retention{Count: 100000})
				} else {
					b.Retain[clockKeyed](topic.Retention{Count: 100000})
				}
				const publishers = 5
				per := 40
				plans := make([][]time.Duration, publishers)
				for p := range plans {
					for range per {
						d := clockPauses[rng.IntN(len(clockPauses))]
						if rng.IntN(4) == 0 {
							d = time.Duration(rng.Int64N(int64(60 * time.Millisecond)))
						}
						plans[p] = append(plans[p], d)
					}
				}
				var mu sync.Mutex
				at := map[uint64]time.Time{}
				var wg sync.WaitGroup
				for p := range publishers {
					wg.Go(func() {
						for i, d := range plans[p] {
							time.Sleep(d)
							off, _ := b.Append(clockKeyed{p, p*1000 + i})
							now := time.Now()
							mu.Lock()
							at[off] = now
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				recs, _, _ := b.Read[clockKeyed](0, 1<<20)
				if len(recs) != publishers*per {
					t.Fatalf("seed %d keyed %v: %d records", seed, keyed, len(recs))
				}
				var last time.Time
				for _, r := range recs {
					a := at[r.Offset]
					if r.Time.After(a) || r.Time.Before(a.Add(-time.Millisecond)) {
						t.Errorf("seed %d keyed %v: record %d time %v, published %v (diff %v)", seed, keyed, r.Offset, r.Time, a, a.Sub(r.Time))
					}
					if r.Time.Before(last) {
						t.Errorf("seed %d keyed %v: record %d goes back", seed, keyed, r.Offset)
					}
					last = r.Time
				}
			})
		}
	}
}

// Shutdown inside a bubble, the timer pending, and publications after it:
// the bubble ends cleanly, with no goroutine of the broker's left.
func TestClockShutdownInABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[retainTick](topic.Retention{Count: 10, Age: time.Second})
		f := b.Follow[retainTick]()
		b.Append(retainTick{1})
		if err := b.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		b.Publish(retainTick{2})
		b.Append(retainTick{3})
		f.Close()
		if n := b.Goroutines(); n != 0 {
			t.Errorf("goroutines %d", n)
		}
	})
}

// The first publication after an idle spell makes the clock's timer: the
// two allocations documented, and none for the publications within a spell.
// In a bubble, so that the idle spell is exactly one, however loaded the
// machine (its timer's ticks would come late in real time).
func TestClockAllocatesOncePerIdleSpell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := retainedBroker(64)
		v := retainPayload{1, 2, 3, 4}
		b.Publish(v)
		got := testing.AllocsPerRun(10, func() {
			b.Publish(v)
			time.Sleep(60 * time.Millisecond) // the timer stops
			b.Publish(v)
		})
		if got != 2 {
			t.Errorf("allocations per idle spell = %v, want 2", got)
		}
		if got := testing.AllocsPerRun(1000, func() { b.Publish(v) }); got != 0 {
			t.Errorf("allocations per publication within a spell = %v, want 0", got)
		}
	})
}

// In real time, publishers bursting and idling around the 50 ms after which
// the timer stops: no time after its publication, and none far before it
// (the bound is loose: a loaded machine delays timers).
func TestClockRealTimeIdleBoundary(t *testing.T) {
	var b topic.Broker
	b.Retain[clockKeyed](topic.Retention{Count: 1 << 20})
	var wg sync.WaitGroup
	var mu sync.Mutex
	type span struct{ before, after time.Time }
	at := map[uint64]span{}
	for p := range 6 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(p), 1))
			for i := range 25 {
				for j := range rng.IntN(50) {
					before := time.Now()
					off, _ := b.Append(clockKeyed{p, i*100 + j})
					after := time.Now()
					mu.Lock()
					at[off] = span{before, after}
					mu.Unlock()
				}
				time.Sleep(45*time.Millisecond + time.Duration(rng.Int64N(int64(10*time.Millisecond))))
			}
		})
	}
	wg.Wait()
	recs, _, _ := b.Read[clockKeyed](0, 1<<20)
	worst := time.Duration(0)
	for _, r := range recs {
		s := at[r.Offset]
		if d := s.before.Sub(r.Time); d > worst {
			worst = d
		}
		if r.Time.After(s.after.Add(time.Millisecond)) { // wall vs monotonic slack
			t.Errorf("record %d time %v after its publication ended %v", r.Offset, r.Time, s.after)
		}
	}
	t.Logf("%d records, worst staleness %v", len(recs), worst)
	if worst > time.Second {
		t.Errorf("a reading outlived its tick: %v", worst)
	}
}

// A type retained outside a bubble, published inside one (its timer then
// armed in the bubble: stopped, or pending when the bubble ends), then
// outside again: the timer made in the bubble is never touched from outside
// (the runtime would end the process), and the log goes on. Times across
// the two clocks are meaningless, as documented, and not checked. In a child
// process, since a fatal error cannot be recovered.
func TestClockTypePublishedInAndOutOfABubble(t *testing.T) {
	for _, mode := range []string{"idle", "pending"} {
		t.Run(mode, func(t *testing.T) {
			if os.Getenv("TOPIC_CLOCK_CHILD") == mode {
				var b topic.Broker
				b.Retain[retainTick](topic.Retention{Count: 10})
				synctest.Test(t, func(t *testing.T) {
					b.Append(retainTick{1})
					if mode == "idle" {
						time.Sleep(100 * time.Millisecond) // the timer stops
					}
				})
				o1, _ := b.Append(retainTick{2})
				time.Sleep(20 * time.Millisecond)
				o2, _ := b.Append(retainTick{3})
				for i := range 200 { // past clockMaxShared, so that the clock is read again
					b.Append(retainTick{4 + i})
					time.Sleep(time.Microsecond)
				}
				r1, _, _ := b.Read[retainTick](o1, 1)
				r2, _, _ := b.Read[retainTick](o2, 1)
				if len(r1) != 1 || len(r2) != 1 || o1 != 1 || o2 != 2 {
					t.Errorf("after the bubble: offsets %d, %d, records %v, %v", o1, o2, r1, r2)
				}
				return
			}
			out, err := runSelf([]string{"TOPIC_CLOCK_CHILD=" + mode}, "-test.run=^TestClockTypePublishedInAndOutOfABubble$/^"+mode+"$", "-test.v")
			s := string(out)
			if i := strings.Index(s, "goroutine "); i > 0 && strings.Contains(s, "fatal error") {
				s = s[:i]
			}
			if err != nil || !strings.Contains(s, "--- PASS: TestClockTypePublishedInAndOutOfABubble/"+mode) {
				t.Errorf("child: %v\n%s", err, s)
			}
		})
	}
}
