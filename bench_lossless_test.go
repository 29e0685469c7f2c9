package topic_test

// The lossless modes side by side: one publisher, n consumers that each
// take every value, against the floor of a lossless design, a buffered
// channel per consumer whose publisher blocks when it is full.

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic"
)

// losslessWindow is how far the slowest consumer may fall behind the
// publisher: the capacity of the baseline's channels, of a handler's
// queue, of a channel follower's channel, and (twice over) what the log
// keeps, so that nothing is dropped, evicted or trimmed unread.
const losslessWindow = 1024

// A losslessMode starts n consumers of Value on br that each count every
// value they take in counts[i], and returns how to publish one value.
// cleanup, run after the timer stops, ends them.
type losslessMode struct {
	name string
	// paced: the publisher waits for the slowest consumer to be less than
	// losslessWindow behind (a topic publisher never blocks: without it a
	// consumer would fall behind for ever); the baseline blocks instead.
	paced bool
	start func(b *testing.B, br *topic.Broker, counts []paddedCount) (publish func(Value), cleanup func())
}

// A paddedCount is one consumer's count, on a cache line of its own.
type paddedCount struct {
	n atomic.Int64
	_ [56]byte
}

var losslessModes = []losslessMode{
	{name: "channel", start: func(b *testing.B, _ *topic.Broker, counts []paddedCount) (func(Value), func()) {
		chs := make([]chan Value, len(counts))
		var wg sync.WaitGroup
		for i := range chs {
			chs[i] = make(chan Value, losslessWindow)
			wg.Go(func() {
				for range chs[i] {
					counts[i].n.Add(1)
				}
			})
		}
		return func(v Value) {
				for _, ch := range chs {
					ch <- v
				}
			}, func() {
				for _, ch := range chs {
					close(ch)
				}
				wg.Wait()
			}
	}},
	{name: "channel-follower", paced: true, start: func(b *testing.B, br *topic.Broker, counts []paddedCount) (func(Value), func()) {
		br.Retain[Value](topic.Retention{Count: 2 * losslessWindow})
		var wg sync.WaitGroup
		var cancels []func()
		for i := range counts {
			ch, cancel := br.Subscribe(topic.Follow[Value](), topic.Buffer[Value](losslessWindow))
			cancels = append(cancels, cancel)
			wg.Go(func() {
				for range ch {
					counts[i].n.Add(1)
				}
			})
		}
		return func(v Value) { br.Publish(v) }, func() {
			for _, c := range cancels {
				c()
			}
			wg.Wait()
		}
	}},
	{name: "batch-follower", paced: true, start: func(b *testing.B, br *topic.Broker, counts []paddedCount) (func(Value), func()) {
		br.Retain[Value](topic.Retention{Count: 2 * losslessWindow})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := range counts {
			f := br.Follow[Value]()
			wg.Go(func() {
				defer f.Close()
				buf := make([]topic.Record[Value], 64)
				for f.Wait(ctx) == nil {
					counts[i].n.Add(int64(f.Read(buf)))
				}
			})
		}
		return func(v Value) { br.Publish(v) }, func() {
			cancel()
			wg.Wait()
		}
	}},
	{name: "handler", paced: true, start: func(b *testing.B, br *topic.Broker, counts []paddedCount) (func(Value), func()) {
		var stops []func()
		for i := range counts {
			stops = append(stops, br.Handle(func(context.Context, Value) error {
				counts[i].n.Add(1)
				return nil
			}, topic.Buffer[Value](losslessWindow)))
		}
		return func(v Value) { br.Publish(v) }, func() {
			for _, s := range stops {
				s()
			}
		}
	}},
	{name: "handler-follower", paced: true, start: func(b *testing.B, br *topic.Broker, counts []paddedCount) (func(Value), func()) {
		br.Retain[Value](topic.Retention{Count: 2 * losslessWindow})
		var stops []func()
		for i := range counts {
			stops = append(stops, br.Handle(func(context.Context, Value) error {
				counts[i].n.Add(1)
				return nil
			}, topic.Follow[Value]()))
		}
		return func(v Value) { br.Publish(v) }, func() {
			for _, s := range stops {
				s()
			}
		}
	}},
}

// BenchmarkLossless publishes b.N values to n consumers that each take every
// one, in each lossless mode: a buffered channel per consumer (the floor),
// a channel follower (Subscribe with Follow), a follower reading batches of
// 64 (Follow, Read), a handler, and a handler following the log. It reports
// the time per value delivered (ns/value) and the values delivered a second
// (values/s), and fails if a consumer missed a value or the broker counted
// a loss of any cause, Skipped included.
func BenchmarkLossless(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		for _, m := range losslessModes {
			b.Run(fmt.Sprintf("mode=%s/n=%d", m.name, n), func(b *testing.B) {
				benchLossless(b, m, n)
			})
		}
	}
}

func benchLossless(b *testing.B, m losslessMode, n int) {
	var br topic.Broker
	defer br.Shutdown(context.Background())
	counts := make([]paddedCount, n)
	publish, cleanup := m.start(b, &br, counts)
	slowest := func() int64 {
		least := counts[0].n.Load()
		for i := range counts[1:] {
			least = min(least, counts[i+1].n.Load())
		}
		return least
	}
	// waitFor waits until every consumer has taken target values, and
	// fails the benchmark if they stop short (a value lost: they would
	// never get there), naming the losses the broker counted.
	waitFor := func(target int64) {
		last, since := slowest(), time.Now()
		for {
			s := slowest()
			if s >= target {
				return
			}
			if s != last {
				last, since = s, time.Now()
			} else if time.Since(since) > 10*time.Second {
				b.Fatalf("%s: the consumers stopped at %d of %d values; losses: %s", m.name, s, target, losses(&br))
			}
			runtime.Gosched()
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		// Every 64 values, so that the check costs little: the consumers
		// are then at most losslessWindow behind.
		if m.paced && i%64 == 0 && int64(i)-slowest() > losslessWindow-64 {
			waitFor(int64(i) - (losslessWindow - 64))
		}
		publish(value)
	}
	waitFor(int64(b.N))
	elapsed := time.Since(start)
	b.StopTimer()

	delivered := float64(b.N) * float64(n)
	b.ReportMetric(float64(elapsed.Nanoseconds())/delivered, "ns/value")
	b.ReportMetric(delivered/elapsed.Seconds(), "values/s")
	if l := losses(&br); l != "none" {
		b.Fatalf("%s: the broker counted losses: %s", m.name, l)
	}
	cleanup()
	for i := range counts {
		if got := counts[i].n.Load(); got != int64(b.N) {
			b.Fatalf("%s: consumer %d took %d values of %d", m.name, i, got, b.N)
		}
	}
}

// losses names each subscription of br that counted a loss, of any cause,
// or says none.
func losses(br *topic.Broker) string {
	var out []string
	for _, s := range br.Subscriptions() {
		if s.Lost.Total() != 0 {
			out = append(out, fmt.Sprintf("%s %q %+v", s.Type, s.Name, s.Lost))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}
