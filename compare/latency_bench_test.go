package compare_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic/compare"
	"github.com/seedaa7df82c/topic/internal/hist"
	"github.com/seedaa7df82c/topic/internal/pace"
)

// latencyRuns are the latency scenarios: n subscribers of one topic, and
// the rate offered, in values a second. Each is below what every library
// delivers at that fan-out on a 2-core machine, so that the figures are a
// subscriber's wait, not a queue's growth (rate-% says if it was not).
var latencyRuns = []struct{ n, rate int }{
	{1, 10_000},
	{10, 10_000},
	{100, 1_000},
}

// BenchmarkLatency publishes b.N values on one topic at a fixed rate, with n
// counting subscribers, and reports the time from each publication to each
// subscriber's receipt of the value: its median (p50-ns), p99-ns and
// p99.9-ns over every value every subscriber received, from a histogram
// exact to 0.8 %. The publisher stamps each value (its A field) just before
// publishing it, sleeps while the next is more than 200 µs away and
// otherwise yields until it is due. rate-% is the rate achieved as a
// percentage of the rate offered (under 100: the publisher fell behind),
// delivered-% the share of the values owed that reached the subscribers.
func BenchmarkLatency(b *testing.B) {
	for _, run := range latencyRuns {
		b.Run(fmt.Sprintf("rate=%dk/n=%d", run.rate/1000, run.n), func(b *testing.B) {
			for _, lib := range compare.Libs {
				b.Run("lib="+lib.Name, func(b *testing.B) { latency(b, lib, run.n, run.rate) })
			}
		})
	}
}

func latency(b *testing.B, lib compare.Lib, n, rate int) {
	bus := lib.New()
	base := time.Now()
	publish := bus.Publisher(0)
	counters := make([]*compare.Counter, n)
	for i := range counters {
		counters[i] = compare.NewLatencyCounter(int64(b.N), base)
		bus.Subscribe(0, counters[i])
	}
	runtime.GC() // the setup's garbage, now rather than while measuring
	b.ResetTimer()
	start, end := pace.Run(b.N, rate, base, func(stamp int64) { publish(compare.Value{A: stamp}) })
	delivery(b, lib, bus, counters, base.Add(start))
	b.StopTimer()
	bus.Close()

	var all hist.Histogram
	var got int64
	for _, c := range counters {
		all.Merge(c.Latency())
		got += c.Load()
	}
	b.ReportMetric(float64(all.Quantile(0.5)), "p50-ns")
	b.ReportMetric(float64(all.Quantile(0.99)), "p99-ns")
	b.ReportMetric(float64(all.Quantile(0.999)), "p99.9-ns")
	b.ReportMetric(100*float64(b.N)/(end-start).Seconds()/float64(rate), "rate-%")
	b.ReportMetric(100*float64(got)/float64(b.N*n), "delivered-%")
}
