package compare_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic/compare"
)

// The benchmarks run every scenario for every library, one top-level
// benchmark per scenario with a lib= sub-benchmark per library, last in the
// name: benchstat -col /lib then puts the libraries side by side in one row
// per scenario, and a sweep's n= key stays in the row name.
//
// ns/op is the wall time from the first publication until every value the
// library is going to deliver has been counted, divided by the publications:
// a library that hands values to goroutines is charged for them. The loop
// therefore counts b.N itself rather than using b.Loop, which stops the timer
// when the last publication returns. allocs/op and B/op count every goroutine,
// the library's and the subscribers'. delivered-% is the share of the values
// owed to the counting subscribers that reached them.

var value = compare.Value{A: 1, B: 2, C: 3, D: 4}

// stuckMax is the most publications BenchmarkStuck makes for a library that
// keeps every value a stuck subscriber holds.
const stuckMax = 20000

// A scenario is what one benchmark sets up before publishing.
type scenario struct {
	topics int  // topics published on, in turn
	subs   int  // counting subscribers of each topic, each drained by its own goroutine
	stuck  bool // whether a stuck subscriber sits beside those of topic 0
}

// BenchmarkNoSubscriber publishes on a topic nobody subscribes to. Nothing is
// owed, so delivered-% is 100.
func BenchmarkNoSubscriber(b *testing.B) {
	eachLib(b, scenario{topics: 1})
}

// BenchmarkFanout publishes on one topic with n counting subscribers; n=1 is
// the scenario of one subscriber drained by its own goroutine.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			eachLib(b, scenario{topics: 1, subs: n})
		})
	}
}

// BenchmarkTopics publishes on n topics in turn, each with one counting
// subscriber.
func BenchmarkTopics(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			eachLib(b, scenario{topics: n, subs: 1})
		})
	}
}

// BenchmarkStuck publishes on one topic with a counting subscriber and a
// stuck one beside it. delivered-% is the counting subscriber's share. A
// library whose publication blocks is skipped: see TestReliability. So is a
// run of more than stuckMax publications of a library that keeps a goroutine
// per held value; compare/run runs this benchmark with -benchtime=10000x.
func BenchmarkStuck(b *testing.B) {
	for _, lib := range compare.Libs {
		b.Run("lib="+lib.Name, func(b *testing.B) {
			if lib.BlocksWhenStuck {
				b.Skip("publication blocks while a subscriber is stuck")
			}
			if lib.GrowsWhenStuck && b.N > stuckMax {
				b.Skipf("keeps every value held: %d publications is over %d; use -benchtime=10000x", b.N, stuckMax)
			}
			run(b, lib, scenario{topics: 1, subs: 1, stuck: true})
		})
	}
}

func eachLib(b *testing.B, sc scenario) {
	for _, lib := range compare.Libs {
		b.Run("lib="+lib.Name, func(b *testing.B) { run(b, lib, sc) })
	}
}

// delivery waits until every value the library is going to deliver has
// been counted, and returns the time since start then: for a lossless
// library, until each counter has reached what it is owed; for one that
// counts its losses, until what was counted and lost add up to it; for
// another, until no counter has moved for quiet, which it leaves out.
func delivery(b *testing.B, lib compare.Lib, bus compare.Bus, counters []*compare.Counter, start time.Time) time.Duration {
	const quiet = time.Millisecond
	if lib.Lossless {
		for _, c := range counters {
			select {
			case <-c.Reached():
			case <-time.After(time.Minute):
				b.Fatalf("%s: a counting subscriber stopped at %d of %d values", lib.Name, c.Load(), c.Want())
			}
		}
		return time.Since(start)
	}
	var owed int64
	sum := func() int64 {
		var n int64
		for _, c := range counters {
			n += c.Load()
		}
		return n
	}
	for _, c := range counters {
		owed += c.Want()
	}
	if lc, ok := bus.(compare.LossCounter); ok {
		for deadline := time.Now().Add(time.Minute); sum()+lc.CountedLosses() < owed; {
			if time.Now().After(deadline) {
				b.Fatalf("%s: received %d and counted %d lost of %d values", lib.Name, sum(), lc.CountedLosses(), owed)
			}
			time.Sleep(10 * time.Microsecond)
		}
		return time.Since(start)
	}
	last, at := sum(), time.Now()
	for time.Since(at) < quiet {
		time.Sleep(10 * time.Microsecond)
		if n := sum(); n != last {
			last, at = n, time.Now()
		}
	}
	return at.Sub(start)
}

// run sets up sc on a fresh instance of lib, publishes b.N values and waits
// for a lossless library to deliver them, then closes the instance and reports
// the share delivered.
func run(b *testing.B, lib compare.Lib, sc scenario) {
	bus := lib.New()
	pubs := make([]func(compare.Value), sc.topics)
	var counters []*compare.Counter
	for t := range pubs {
		pubs[t] = bus.Publisher(t)
		want := int64(b.N / sc.topics)
		if t < b.N%sc.topics {
			want++
		}
		for range sc.subs {
			c := compare.NewCounter(want)
			bus.Subscribe(t, c)
			if want > 0 {
				counters = append(counters, c)
			}
		}
	}
	var stuck compare.Stuck
	if sc.stuck {
		stuck = bus.SubscribeStuck(0)
	}

	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	t := 0
	for range b.N {
		pubs[t](value)
		// A wrapping counter rather than i%len: a division would cost as
		// much as some libraries' whole publication.
		if t++; t == len(pubs) {
			t = 0
		}
	}
	elapsed := delivery(b, lib, bus, counters, start)
	b.StopTimer()
	var delivered int64 // within the timed run
	for _, c := range counters {
		delivered += c.Load()
	}

	if stuck != nil {
		stuck.Release()
	}
	bus.Close()
	var got int64
	for _, c := range counters {
		got += c.Load()
	}
	pct := 100.0
	if owed := int64(b.N) * int64(sc.subs); owed > 0 {
		pct = 100 * float64(got) / float64(owed)
	}
	b.ReportMetric(pct, "delivered-%")
	// Goodput: the values that reached the counting subscribers while the
	// timer ran, per second, in all and per subscriber; dropping earns
	// nothing here.
	if subs := sc.topics * sc.subs; subs > 0 {
		rate := float64(delivered) / elapsed.Seconds()
		b.ReportMetric(rate, "delivered/s")
		b.ReportMetric(rate/float64(subs), "delivered/s/sub")
	}
}
