package topic_test

// The lossless modes side by side: one publisher, n consumers that each
// take every value, against the floor of a lossless design, a buffered
// channel per consumer whose publisher blocks when it is full.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/internal/hist"
)

// losslessWindow is how far the slowest consumer may fall behind the
// publisher: the capacity of the baseline's channels, of a handler's
// queue, of a channel follower's channel, and (twice over) what the log
// keeps, so that nothing is dropped, evicted or trimmed unread.
const losslessWindow = 1024

// A losslessMode starts a consumer of Value on br for each of cs, which
// takes every value it receives, and returns how to publish one value.
// window is how far a consumer may fall behind and lose nothing: the
// capacity of a channel or a handler's queue, half what a log keeps.
// cleanup, run after the timer stops, ends them.
type losslessMode struct {
	name string
	// paced: the publisher sleeps while the slowest consumer is
	// losslessWindow behind, until it has taken one more value (a topic
	// publisher never blocks: without it a consumer would fall behind for
	// ever), as the baseline's sleeps in a full channel.
	paced bool
	// lossy: the mode may drop (the latency benchmark's plain Subscribe);
	// its losses are reported, not failed.
	lossy bool
	start func(b *testing.B, br *topic.Broker, cs []consumer, window int) (publish func(Value), cleanup func())
}

// A consumer counts the values it takes, and if lat is set records the
// latency of each: the time since the Publish its A field stamps, in
// nanoseconds since base. If pace is set, it signals it on reaching the
// count it waits for. Each is on cache lines of its own.
type consumer struct {
	n    atomic.Int64
	lat  *hist.Histogram
	base time.Time
	pace *pacer
	_    [24]byte
}

// A pacer lets a publisher sleep until its consumers have each taken a
// count of values, as the publisher of a full channel sleeps until its
// receiver takes one, rather than burn a processor they need: each
// consumer signals it on reaching the count (want).
type pacer struct {
	want atomic.Int64
	ch   chan struct{} // capacity 1: a signal sent before the wait is kept
}

// took counts k values taken, and signals the pacer if they reach its count.
func (c *consumer) took(k int64) {
	n := c.n.Add(k)
	if p := c.pace; p != nil {
		if want := p.want.Load(); n >= want && n-k < want {
			select {
			case p.ch <- struct{}{}:
			default: // a signal is pending: the publisher looks at every count
			}
		}
	}
}

// take takes one value.
func (c *consumer) take(v Value) {
	if c.lat != nil {
		c.lat.Record(time.Since(c.base) - time.Duration(v.A))
	}
	c.took(1)
}

// takeRecords takes a batch read from a follower.
func (c *consumer) takeRecords(rs []topic.Record[Value]) {
	if c.lat != nil {
		now := time.Since(c.base)
		for _, r := range rs {
			c.lat.Record(now - time.Duration(r.Value.A))
		}
	}
	c.took(int64(len(rs)))
}

var losslessModes = []losslessMode{
	{name: "channel", start: func(b *testing.B, _ *topic.Broker, cs []consumer, window int) (func(Value), func()) {
		chs := make([]chan Value, len(cs))
		var wg sync.WaitGroup
		for i := range chs {
			chs[i] = make(chan Value, window)
			wg.Go(func() {
				for v := range chs[i] {
					cs[i].take(v)
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
	{name: "channel-follower", paced: true, start: func(b *testing.B, br *topic.Broker, cs []consumer, window int) (func(Value), func()) {
		br.Retain[Value](topic.Retention{Count: 2 * window})
		return channelConsumers(br, cs, topic.Follow[Value](), topic.Buffer[Value](window))
	}},
	{name: "batch-follower", paced: true, start: func(b *testing.B, br *topic.Broker, cs []consumer, window int) (func(Value), func()) {
		br.Retain[Value](topic.Retention{Count: 2 * window})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := range cs {
			f := br.Follow[Value]()
			wg.Go(func() {
				defer f.Close()
				buf := make([]topic.Record[Value], 64)
				for f.Wait(ctx) == nil {
					cs[i].takeRecords(buf[:f.Read(buf)])
				}
			})
		}
		return func(v Value) { br.Publish(v) }, func() {
			cancel()
			wg.Wait()
		}
	}},
	{name: "handler", paced: true, start: func(b *testing.B, br *topic.Broker, cs []consumer, window int) (func(Value), func()) {
		var stops []func()
		for i := range cs {
			stops = append(stops, br.Handle(func(_ context.Context, v Value) error {
				cs[i].take(v)
				return nil
			}, topic.Buffer[Value](window)))
		}
		return func(v Value) { br.Publish(v) }, func() {
			for _, s := range stops {
				s()
			}
		}
	}},
	{name: "handler-follower", paced: true, start: func(b *testing.B, br *topic.Broker, cs []consumer, window int) (func(Value), func()) {
		br.Retain[Value](topic.Retention{Count: 2 * window})
		var stops []func()
		for i := range cs {
			stops = append(stops, br.Handle(func(_ context.Context, v Value) error {
				cs[i].take(v)
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
// a loss of any cause, Skipped included. Where the system tells it, it
// also reports the CPU time of the whole process per value delivered
// (cpu-ns/value): ns/value is set by the slowest of the goroutines that
// hand a value on, and by how they wait for each other on the cores they
// share; cpu-ns/value is what delivering a value costs all of them.
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
	counts := make([]consumer, n)
	pace := &pacer{ch: make(chan struct{}, 1)}
	for i := range counts {
		counts[i].pace = pace
	}
	publish, cleanup := m.start(b, &br, counts, losslessWindow)
	slowest := func() int64 { return slowestOf(counts) }
	// waitFor sleeps until every consumer has taken target values, and
	// fails the benchmark if they stop short (a value lost: they would
	// never get there), naming the losses the broker counted.
	stuck := time.NewTimer(time.Hour)
	defer stuck.Stop()
	waitFor := func(target int64) {
		pace.want.Store(target) // then look: a consumer that reaches it after signals
		stuck.Reset(10 * time.Second)
		for last := slowest(); last < target; last = slowest() {
			select {
			case <-pace.ch:
			case <-stuck.C:
				if s := slowest(); s == last {
					b.Fatalf("%s: the consumers stopped at %d of %d values; losses: %s", m.name, s, target, losses(&br))
				}
				stuck.Reset(10 * time.Second)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU()
	for i := range b.N {
		// Every 64 values, so that the check costs little: the consumers
		// are then at most losslessWindow behind.
		if m.paced && i%64 == 0 && int64(i)-slowest() > losslessWindow-64 {
			waitFor(int64(i) - (losslessWindow - 64))
		}
		publish(value)
	}
	waitFor(int64(b.N))
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	b.StopTimer()

	delivered := float64(b.N) * float64(n)
	b.ReportMetric(float64(elapsed.Nanoseconds())/delivered, "ns/value")
	b.ReportMetric(delivered/elapsed.Seconds(), "values/s")
	if cpu0 >= 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/delivered, "cpu-ns/value")
	}
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

// channelConsumers subscribes to Value on br, with opts, for each of cs a
// channel that a goroutine of its own ranges over, taking every value; it
// returns how to publish, and how to cancel them and wait for their ends.
func channelConsumers(br *topic.Broker, cs []consumer, opts ...topic.Option[Value]) (publish func(Value), cleanup func()) {
	var wg sync.WaitGroup
	var cancels []func()
	for i := range cs {
		ch, cancel := br.Subscribe(opts...)
		cancels = append(cancels, cancel)
		wg.Go(func() {
			for v := range ch {
				cs[i].take(v)
			}
		})
	}
	return func(v Value) { br.Publish(v) }, func() {
		for _, c := range cancels {
			c()
		}
		wg.Wait()
	}
}

// slowestOf is the least count of cs.
func slowestOf(cs []consumer) int64 {
	least := cs[0].n.Load()
	for i := range cs[1:] {
		least = min(least, cs[i+1].n.Load())
	}
	return least
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
