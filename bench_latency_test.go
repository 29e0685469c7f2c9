package topic_test

// Latency below saturation: the time from a Publish to the consumer's
// receipt of the value, at a fixed offered rate, for each lossless mode,
// the lossy Subscribe and the plain channel.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/internal/hist"
	"github.com/seedaa7df82c/topic/internal/pace"
)

// latencyModes are the lossless modes and the lossy Subscribe.
var latencyModes = append(losslessModes[:len(losslessModes):len(losslessModes)], losslessMode{
	name: "subscribe", lossy: true,
	start: func(b *testing.B, br *topic.Broker, cs []consumer, window int) (func(Value), func()) {
		return channelConsumers(br, cs, topic.Buffer[Value](window))
	}})

// latencyWindow is how far a consumer may fall behind and lose nothing
// (see losslessMode): enough for a pause of 60 ms at the highest rate.
const latencyWindow = 1 << 16

// latencyRates are the offered rates, in values a second.
var latencyRates = []int{10_000, 100_000, 1_000_000}

// BenchmarkLatency publishes at a fixed rate to one consumer (and to ten
// at 100,000 a second) in every mode at once, interleaved, and reports for
// each mode the time from a Publish to the consumer's receipt of the value:
// its median (<mode>-p50-ns), <mode>-p99-ns and <mode>-p99.9-ns over every
// value of every consumer, from a histogram exact to 0.8 %.
//
// Each mode has its own broker and consumers, and b.N values, after a
// warm-up that lets its log grow to what it keeps and wrap, and its
// buffers wrap too (latencyWarm values, not measured): the figures are a
// running program's, not its first values'. The publisher takes the modes
// in turn, in slices of about 250 µs of the offered rate (2 values at
// 10,000 a second, 250 at 1,000,000), in an order shuffled anew for each
// turn of all of them: a stall of the whole machine, which delays every
// value published during it by up to its length, falls on all the modes
// alike, so that a mode's figures read against the plain channel's of the
// same run. A stall of one thread delays the one consumer it stops, and
// falls more often on a consumer the longer it runs for each value. The
// values are stamped with the time of their Publish, just before it; the
// publisher sleeps while the next value is more than 200 µs away and
// otherwise yields (runtime.Gosched) until it is due, so the consumers get
// the processor in between. rate-% is the rate achieved, as a percentage
// of the rate offered: under 100, the publisher fell behind and the
// figures are no longer below saturation. A lossless mode fails the run if
// any value is lost; the lossy Subscribe reports what it lost
// (subscribe-lost-%).
func BenchmarkLatency(b *testing.B) {
	for _, rate := range latencyRates {
		ns := []int{1}
		if rate == 100_000 {
			ns = append(ns, 10)
		}
		for _, n := range ns {
			b.Run(fmt.Sprintf("rate=%dk/n=%d", rate/1000, n), func(b *testing.B) {
				benchLatency(b, rate, n)
			})
		}
	}
}

// A latencyRun is one mode's part of BenchmarkLatency's run.
type latencyRun struct {
	m       losslessMode
	br      topic.Broker
	cs      []consumer
	publish func(Value)
	cleanup func()
	sent    int
	lost0   int64 // the losses counted before the measurement
}

func benchLatency(b *testing.B, rate, n int) {
	base := time.Now()
	runs := make([]latencyRun, len(latencyModes))
	for i, m := range latencyModes {
		r := &runs[i]
		r.m, r.cs = m, make([]consumer, n)
		for j := range r.cs {
			r.cs[j].lat, r.cs[j].base = new(hist.Histogram), base
		}
		r.publish, r.cleanup = m.start(b, &r.br, r.cs, latencyWindow)
		defer r.br.Shutdown(context.Background())
		r.warm(b, base, latencyWarm)
	}
	// The modes' turns: slice values each, in an order shuffled for each
	// turn of them all; a mode that has published b.N values is passed over.
	slice := max(1, rate/4000)
	order := make([]int, len(runs))
	for i := range order {
		order[i] = i
	}
	rng := rand.New(rand.NewPCG(1, 2))
	at, left := len(order), 0
	next := func() *latencyRun {
		for {
			if left > 0 && runs[order[at]].sent < b.N {
				left--
				return &runs[order[at]]
			}
			if at++; at >= len(order) {
				rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				at = 0
			}
			left = slice
		}
	}
	// The setup's garbage (the last run's channels and logs) collected
	// now, not in the middle of the measurement.
	runtime.GC()
	b.ResetTimer()
	// The next mode is chosen after a Publish, not between its stamp and
	// the Publish, where it would count in the latency.
	total, r := b.N*len(runs), next()
	start, end := pace.Run(total, rate, base, func(stamp int64) {
		r.publish(Value{A: stamp})
		r.sent++
		if total--; total > 0 {
			r = next()
		}
	})
	for i := range runs {
		runs[i].waitTaken(b, b.N)
	}
	b.StopTimer()
	for i := range runs {
		r := &runs[i]
		l := losses(&r.br)
		if !r.m.lossy && l != "none" {
			b.Fatalf("%s: the broker counted losses: %s", r.m.name, l)
		}
		lost := lostOf(&r.br) - r.lost0
		r.cleanup()
		var all hist.Histogram
		for j := range r.cs {
			all.Merge(r.cs[j].lat)
		}
		b.ReportMetric(float64(all.Quantile(0.5)), r.m.name+"-p50-ns")
		b.ReportMetric(float64(all.Quantile(0.99)), r.m.name+"-p99-ns")
		b.ReportMetric(float64(all.Quantile(0.999)), r.m.name+"-p99.9-ns")
		if r.m.lossy {
			b.ReportMetric(100*float64(lost)/float64(b.N*n), r.m.name+"-lost-%")
		}
	}
	b.ReportMetric(100*float64(b.N*len(runs))/(end-start).Seconds()/float64(rate), "rate-%")
}

// latencyWarm is how many values each mode of BenchmarkLatency delivers
// before it is measured: enough for a log to grow to what it keeps, and
// then to reuse its memory, as for the channels' buffers and the
// handlers' queues.
const latencyWarm = 2*latencyWindow + latencyWindow/2

// warm publishes n values to r, a thousand or so at a time, the consumers
// taking each batch before the next, then forgets them: what they took and
// their latencies.
func (r *latencyRun) warm(b *testing.B, base time.Time, n int) {
	for i := range n {
		r.publish(Value{A: int64(time.Since(base))})
		if (i+1)%1024 == 0 {
			r.waitTaken(b, i+1)
		}
	}
	r.waitTaken(b, n)
	for i := range r.cs {
		r.cs[i].n.Store(0)
		r.cs[i].lat.Reset()
	}
	r.lost0 = lostOf(&r.br)
}

// waitTaken waits until every consumer of r has taken n values, or the
// broker counted the others lost, and fails the benchmark if they stop
// short for 10 seconds.
func (r *latencyRun) waitTaken(b *testing.B, n int) {
	for deadline := time.Now().Add(10 * time.Second); ; {
		taken := int64(0)
		for i := range r.cs {
			taken += r.cs[i].n.Load()
		}
		if taken+lostOf(&r.br)-r.lost0 >= int64(n*len(r.cs)) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: the consumers took %d of %d values; losses: %s", r.m.name, taken, n*len(r.cs), losses(&r.br))
		}
		runtime.Gosched()
	}
}

// lostOf is every loss br counted, of every subscription.
func lostOf(br *topic.Broker) int64 {
	var n int64
	for _, s := range br.Subscriptions() {
		n += int64(s.Lost.Total())
	}
	return n
}

// BenchmarkMachineStalls measures what the machine takes from a running
// goroutine, with nothing of the broker's involved, to read the latency
// tails by: a goroutine on each processor reads the clock in a loop for
// b.N times 10 µs (the interval of the 100,000/s runs) and counts each gap
// between two reads longer than 100 µs as a stall. It reports the longest
// (max-stall-ns), the stalls a second of one goroutine's time
// (stalls/s), and the share of its time lost in them (stalled-%). A
// stall of d at an offered rate r delays about d·r values by up to d: one
// of 4 ms in a run of 10,000 values at 100,000/s puts BenchmarkLatency's
// p99 and p99.9 near 4 ms, for the plain channel as for the broker.
func BenchmarkMachineStalls(b *testing.B) {
	const stall = 100 * time.Microsecond
	procs := runtime.GOMAXPROCS(0)
	type result struct {
		max, lost time.Duration
		n         int
	}
	results := make([]result, procs)
	span := time.Duration(b.N) * 10 * time.Microsecond
	b.ResetTimer()
	var wg sync.WaitGroup
	for p := range results {
		wg.Go(func() {
			r := &results[p]
			last := time.Now()
			for end := last.Add(span); last.Before(end); {
				now := time.Now()
				if d := now.Sub(last); d > stall {
					r.max, r.lost, r.n = max(r.max, d), r.lost+d, r.n+1
				}
				last = now
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	var all result
	for _, r := range results {
		all.max, all.lost, all.n = max(all.max, r.max), all.lost+r.lost, all.n+r.n
	}
	spent := span.Seconds() * float64(procs)
	b.ReportMetric(float64(all.max.Nanoseconds()), "max-stall-ns")
	b.ReportMetric(float64(all.n)/spent, "stalls/s")
	b.ReportMetric(100*all.lost.Seconds()/spent, "stalled-%")
}
