package topic_test

// Latency below saturation: the time from a Publish to the consumer's
// receipt of the value, at a fixed offered rate, for each lossless mode,
// the lossy Subscribe and the plain channel.

import (
	"context"
	"fmt"
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

// BenchmarkLatency publishes b.N values at a fixed rate to one consumer
// (and to ten at 100,000 a second) in each mode, and reports the time from
// each Publish to the consumer's receipt of the value: its median
// (p50-ns), p99-ns and p99.9-ns over every value of every consumer, from
// a histogram exact to 0.8 %. The values are stamped with the time of
// their Publish, just before it; the publisher sleeps while the next value
// is more than 200 µs away and otherwise yields (runtime.Gosched) until it
// is due, so the consumers get the processor in between. rate-% is the
// rate achieved, as a percentage of the rate offered: under 100, the
// publisher fell behind and the figures are no longer below saturation. A
// lossless mode fails the run if any value is lost; the lossy Subscribe
// reports what it lost (lost-%).
func BenchmarkLatency(b *testing.B) {
	for _, rate := range latencyRates {
		ns := []int{1}
		if rate == 100_000 {
			ns = append(ns, 10)
		}
		for _, n := range ns {
			for _, m := range latencyModes {
				b.Run(fmt.Sprintf("rate=%dk/mode=%s/n=%d", rate/1000, m.name, n), func(b *testing.B) {
					benchLatency(b, m, rate, n)
				})
			}
		}
	}
}

func benchLatency(b *testing.B, m losslessMode, rate, n int) {
	var br topic.Broker
	defer br.Shutdown(context.Background())
	base := time.Now()
	cs := make([]consumer, n)
	for i := range cs {
		cs[i].lat, cs[i].base = new(hist.Histogram), base
	}
	publish, cleanup := m.start(b, &br, cs, latencyWindow)
	// The setup's garbage (the last run's channels and log) collected
	// now, not in the middle of the measurement.
	runtime.GC()
	b.ResetTimer()
	start, end := pace.Run(b.N, rate, base, func(stamp int64) { publish(Value{A: stamp}) })
	// Every value taken by every consumer, or counted lost.
	for deadline := time.Now().Add(10 * time.Second); ; {
		taken := int64(0)
		for i := range cs {
			taken += cs[i].n.Load()
		}
		if taken+lostOf(&br) >= int64(b.N*n) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: the consumers took %d of %d values; losses: %s", m.name, taken, b.N*n, losses(&br))
		}
		runtime.Gosched()
	}
	b.StopTimer()
	if l := losses(&br); !m.lossy && l != "none" {
		b.Fatalf("%s: the broker counted losses: %s", m.name, l)
	}
	lost := lostOf(&br)
	cleanup()
	var all hist.Histogram
	for i := range cs {
		all.Merge(cs[i].lat)
	}
	b.ReportMetric(float64(all.Quantile(0.5)), "p50-ns")
	b.ReportMetric(float64(all.Quantile(0.99)), "p99-ns")
	b.ReportMetric(float64(all.Quantile(0.999)), "p99.9-ns")
	b.ReportMetric(100*float64(b.N)/(end-start).Seconds()/float64(rate), "rate-%")
	if m.lossy {
		b.ReportMetric(100*float64(lost)/float64(b.N*n), "lost-%")
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
