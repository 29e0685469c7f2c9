//go:build !topic_nosweeps

package topic_test

// The benchmarks that need the thousand types of types_test.go, which take
// a minute of each test build's compiling and of staticcheck: the check's
// race, cover and fuzz steps and its staticcheck build without them (tag
// topic_nosweeps, see the Makefile), its smoke step and the benchmark
// targets with them.

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// BenchmarkPublishTypes publishes to the last subscribed of n distinct types.
func BenchmarkPublishTypes(b *testing.B) {
	for _, n := range sizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			var br topic.Broker
			subscribeTypes(b, &br, n-1)
			ch, cancel := br.Subscribe[Value]()
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				br.Publish(value)
				<-ch
			}
		})
	}
}

// BenchmarkSubscribeCancel subscribes and cancels one subscription while n
// others are held, spread over 100 other types.
func BenchmarkSubscribeCancel(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			var br topic.Broker
			subscribeSpread(b, &br, n, 100)
			b.ReportAllocs()
			for b.Loop() {
				_, cancel := br.Subscribe[Value]()
				cancel()
			}
		})
	}
}

// BenchmarkSubscribeNewTypes makes the first subscription of each of n
// concrete types on a fresh broker.
func BenchmarkSubscribeNewTypes(b *testing.B) {
	n := len(subscribers)
	b.ReportAllocs()
	cancels := make([]func(), n)
	for b.Loop() {
		var br topic.Broker
		for i, sub := range subscribers {
			cancels[i] = sub(&br)
		}
		for _, cancel := range cancels {
			cancel()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/type")
}

// BenchmarkPublishParallelDistinctTypes publishes from GOMAXPROCS
// goroutines, each its own type, each to a subscription drained by its own
// goroutine.
func BenchmarkPublishParallelDistinctTypes(b *testing.B) {
	var br topic.Broker
	var pubs, cancels []func()
	var dones []chan struct{}
	for i := range runtime.GOMAXPROCS(0) {
		pub, cancel, done := distinctType(&br, i)
		pubs = append(pubs, pub)
		cancels = append(cancels, cancel)
		dones = append(dones, done)
	}
	b.ReportAllocs()
	parallel(b, func(i, n int) {
		publish := pubs[i]
		for range n {
			publish()
		}
	})
	for i, cancel := range cancels {
		cancel()
		<-dones[i]
	}
}

// subscribeTypes subscribes once to each of n distinct types, cancelled when
// the benchmark ends.
func subscribeTypes(b *testing.B, br *topic.Broker, n int) {
	for i := range n {
		b.Cleanup(subscribers[i](br))
	}
}

// subscribeSpread holds n subscriptions spread over the first k types.
func subscribeSpread(b *testing.B, br *topic.Broker, n, k int) {
	for i := range n {
		b.Cleanup(subscribers[i%k](br))
	}
}

// distinctType returns a publication of the i-th of a few distinct types,
// the cancellation of a subscription to it drained by its own goroutine, and
// a channel closed when that goroutine ends.
func distinctType(br *topic.Broker, i int) (publish, cancel func(), done chan struct{}) {
	switch i % 4 {
	case 0:
		return drained(br, t0{})
	case 1:
		return drained(br, t1{})
	case 2:
		return drained(br, t2{})
	default:
		return drained(br, t3{})
	}
}

// BenchmarkSubscriptions takes the introspection snapshot of a broker
// holding 10,000 subscriptions over 100 types.
func BenchmarkSubscriptions(b *testing.B) {
	var br topic.Broker
	subscribeSpread(b, &br, 10000, 100)
	b.ReportAllocs()
	for b.Loop() {
		if n := len(br.Subscriptions()); n != 10000 {
			b.Fatalf("%d subscriptions in the snapshot, want 10000", n)
		}
	}
}

// BenchmarkWatch is one interval of a Watch with 10,000 subscriptions, 100
// of which lost a value in it: the snapshot, the differences, 100 calls.
func BenchmarkWatch(b *testing.B) {
	type loser struct{}
	var br topic.Broker
	subscribeSpread(b, &br, 9900, 100)
	for range 100 {
		_, cancel := br.Subscribe(topic.Buffer[loser](0))
		b.Cleanup(cancel)
	}
	var n int
	scan, stop := br.WatchScan(func(topic.Incident) { n++ })
	defer stop()
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(loser{}) // lost by each of the 100
		scan()
	}
	if n != 100*b.N {
		b.Fatalf("%d incidents reported in %d intervals, want 100 each", n, b.N)
	}
}

func drained[T any](br *topic.Broker, v T) (publish, cancel func(), done chan struct{}) {
	ch, cancel := br.Subscribe(topic.Buffer[T](1024))
	done = make(chan struct{})
	go func() {
		for range ch {
		}
		close(done)
	}()
	return func() { br.Publish(v) }, cancel, done
}
