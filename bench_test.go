package topic_test

// The thousand types of the sweeps over the number of types.
//go:generate go run ./internal/cmd/gentypes -o types_test.go

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic"
)

// Payloads of the benchmarks. Value is 32 bytes: boxing it allocates.
type (
	Value    struct{ A, B, C, D int64 }
	Other    struct{ A, B, C, D int64 }
	Small    uint8
	Celsius  float64
	Fahren   float64
	Stringer struct{ A, B, C, D int64 }
)

func (Stringer) String() string { return "stringer" }

// Value implements none of these: they model wildcard subscriptions that do
// not match.
type (
	nomatch0 interface{ NoMatch0() }
	nomatch1 interface{ NoMatch1() }
)

var value = Value{1, 2, 3, 4}

// The raw-channel baselines: the physical floor every figure is read against.

// BenchmarkRawSend is one non-blocking send into a buffered channel that is
// drained after each send: the floor of direct delivery.
func BenchmarkRawSend(b *testing.B) {
	ch := make(chan Value, 1)
	b.ReportAllocs()
	for b.Loop() {
		select {
		case ch <- value:
		default:
		}
		<-ch
	}
}

// BenchmarkRawSend10 is ten such sends, then ten receives.
func BenchmarkRawSend10(b *testing.B) {
	chs := make([]chan Value, 10)
	for i := range chs {
		chs[i] = make(chan Value, 1)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, ch := range chs {
			select {
			case ch <- value:
			default:
			}
		}
		for _, ch := range chs {
			<-ch
		}
	}
}

// BenchmarkRawSendFull is a non-blocking send into a full channel: the floor
// of the drop path.
func BenchmarkRawSendFull(b *testing.B) {
	ch := make(chan Value, 1)
	ch <- value
	b.ReportAllocs()
	for b.Loop() {
		select {
		case ch <- value:
		default:
		}
	}
}

// BenchmarkRawSendFullParallel is the same from GOMAXPROCS goroutines.
func BenchmarkRawSendFullParallel(b *testing.B) {
	ch := make(chan Value, 1)
	ch <- value
	b.ReportAllocs()
	parallel(b, func(_, n int) {
		for range n {
			select {
			case ch <- value:
			default:
			}
		}
	})
}

// parallel runs body on GOMAXPROCS goroutines at once, goroutine i doing n
// of the b.N iterations, and returns once all have: the parallel rows' loop,
// in place of b.RunParallel. RunParallel gives each goroutine a counter of
// its own (testing.PB, 32 bytes) that it writes at every iteration, and two
// of them can fall on one cache line; the goroutines then pass that line
// back and forth at every iteration, and a row measures one of two times by
// run: BenchmarkPublishParallelDistinctTypes took 4.7 to 6.0 or 13.4 to 19.8
// ns, at random from one run to the next in one process, and 4.9 to 8.1 ns
// in a loop of this kind (2026-12-04, 2 cores).
func parallel(b *testing.B, body func(i, n int)) {
	p := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	b.ResetTimer()
	for i := range p {
		n := share(b.N, p, i)
		wg.Go(func() { body(i, n) })
	}
	wg.Wait()
	b.StopTimer()
}

// share is goroutine i's share of n iterations over p goroutines: n in all,
// the remainder one each to the first.
func share(n, p, i int) int {
	if i < n%p {
		return n/p + 1
	}
	return n / p
}

// The rows of the reference's table.

func BenchmarkPublishNoSubscriber(b *testing.B) {
	var br topic.Broker
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(value)
	}
}

func BenchmarkPublishUnmatched(b *testing.B) {
	var br topic.Broker
	_, cancel := br.Subscribe[Other]()
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(value)
	}
}

// BenchmarkPublishSaturated is routing only: the one subscription's buffer is
// full, so every publication is dropped.
func BenchmarkPublishSaturated(b *testing.B) {
	var br topic.Broker
	_, cancel := br.Subscribe[Value]()
	defer cancel()
	br.Publish(value)
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(value)
	}
}

func BenchmarkPublishSaturatedParallel(b *testing.B) {
	var br topic.Broker
	_, cancel := br.Subscribe[Value]()
	defer cancel()
	br.Publish(value)
	b.ReportAllocs()
	parallel(b, func(_, n int) {
		for range n {
			br.Publish(value)
		}
	})
}

func BenchmarkPublishDirect(b *testing.B) {
	var br topic.Broker
	ch, cancel := br.Subscribe[Value]()
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(value)
		<-ch
	}
}

func BenchmarkPublishPointerToInterface(b *testing.B) {
	var br topic.Broker
	ch, cancel := br.Subscribe[fmt.Stringer]()
	defer cancel()
	p := &Stringer{1, 2, 3, 4}
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(p)
		<-ch
	}
}

func BenchmarkPublishInterfaceToInterface(b *testing.B) {
	var br topic.Broker
	ch, cancel := br.Subscribe[fmt.Stringer]()
	defer cancel()
	var v any = &Stringer{1, 2, 3, 4}
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(v)
		<-ch
	}
}

func BenchmarkPublishTransform(b *testing.B) {
	var br topic.Broker
	ch, cancel := br.Subscribe(topic.From(func(c Celsius) (Fahren, bool) { return Fahren(c*9/5 + 32), true }))
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(Celsius(100))
		<-ch
	}
}

func BenchmarkPublishFilterRejecting(b *testing.B) {
	var br topic.Broker
	_, cancel := br.Subscribe(topic.From(func(v Value) (Value, bool) { return v, false }))
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(value)
	}
}

func BenchmarkPublishSmallToAny(b *testing.B) {
	var br topic.Broker
	ch, cancel := br.Subscribe[any]()
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(Small(7))
		<-ch
	}
}

func BenchmarkPublishValueToAny(b *testing.B) {
	var br topic.Broker
	ch, cancel := br.Subscribe[any]()
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(value)
		<-ch
	}
}

// Sweeps.

var sizes = []int{1, 10, 100, 1000}

// BenchmarkPublishFanout delivers to n subscriptions of the published type.
func BenchmarkPublishFanout(b *testing.B) {
	for _, n := range sizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			var br topic.Broker
			chs := make([]<-chan Value, n)
			for i := range chs {
				var cancel func()
				chs[i], cancel = br.Subscribe[Value]()
				defer cancel()
			}
			b.ReportAllocs()
			for b.Loop() {
				br.Publish(value)
				for _, ch := range chs {
					<-ch
				}
			}
		})
	}
}

// BenchmarkSubscribeCancelSameType subscribes and cancels one subscription
// of Value while n others of Value are held: the shape of a server whose
// every client subscribes to one event type.
func BenchmarkSubscribeCancelSameType(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			var br topic.Broker
			for range n {
				_, cancel := br.Subscribe[Value]()
				defer cancel()
			}
			b.ReportAllocs()
			for b.Loop() {
				_, cancel := br.Subscribe[Value]()
				cancel()
			}
		})
	}
}

// BenchmarkRouteNewTypes routes n new dynamic types on a fresh broker: each
// is published through any beside an interface subscription it does not
// match, so that each is resolved once under the broker's lock. The total
// must grow linearly: ns/type stays flat as n grows.
func BenchmarkRouteNewTypes(b *testing.B) {
	for _, n := range []int{1000, 8000, 32000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			values := newDynamicValues(n)
			b.ReportAllocs()
			for b.Loop() {
				var br topic.Broker
				_, cancel := br.Subscribe[fmt.Stringer]()
				for _, v := range values {
					br.Publish(v)
				}
				cancel()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/type")
		})
	}
}

// newDynamicValues returns n values of n distinct types made at run time,
// arrays of empty structs of lengths 1 to n: none takes any memory.
func newDynamicValues(n int) []any {
	elem := reflect.TypeFor[struct{}]()
	values := make([]any, n)
	for i := range values {
		values[i] = reflect.Zero(reflect.ArrayOf(i+1, elem)).Interface()
	}
	return values
}

// BenchmarkPublishInterfaceSubscriptions publishes a concrete value beside n
// interface subscriptions that it does not match.
func BenchmarkPublishInterfaceSubscriptions(b *testing.B) {
	for _, n := range []int{0, 1, 10, 100} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			var br topic.Broker
			for i := range n {
				var cancel func()
				if i%2 == 0 {
					_, cancel = br.Subscribe[nomatch0]()
				} else {
					_, cancel = br.Subscribe[nomatch1]()
				}
				defer cancel()
			}
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

// Parallel publishers.

// BenchmarkPublishParallelOneType publishes one type from GOMAXPROCS
// goroutines to a subscription drained by its own goroutine.
func BenchmarkPublishParallelOneType(b *testing.B) {
	publishParallelOneType(b, new(topic.Broker))
}

// publishParallelOneType publishes Value on br from GOMAXPROCS goroutines to
// a subscription drained by its own goroutine.
func publishParallelOneType(b *testing.B, br *topic.Broker) {
	ch, cancel := br.Subscribe(topic.Buffer[Value](1024))
	done := make(chan struct{})
	go func() {
		for range ch {
		}
		close(done)
	}()
	b.ReportAllocs()
	parallel(b, func(_, n int) {
		for range n {
			br.Publish(value)
		}
	})
	cancel()
	<-done
}

// BenchmarkGuard is what makes cancel safe against a concurrent send, alone:
// one publication enters and leaves it once, however many subscriptions it
// reaches.
func BenchmarkGuard(b *testing.B) {
	g := topic.NewGuard()
	b.ReportAllocs()
	for b.Loop() {
		g.EnterExit()
	}
}

// BenchmarkSubscriptionMemory reports the heap held per capacity-one
// subscription of a 32-byte value type, broker share included, over 10,000
// subscriptions.
func BenchmarkSubscriptionMemory(b *testing.B) {
	const n = 10000
	var before, after runtime.MemStats
	for b.Loop() {
		var br topic.Broker
		cancels := make([]func(), n)
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range cancels {
			_, cancels[i] = br.Subscribe[Value]()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/sub")
		for _, cancel := range cancels {
			cancel()
		}
	}
}

// BenchmarkPublishDropOldest publishes to a full drop-oldest subscription:
// every publication evicts the oldest value, counted, and queues its own.
func BenchmarkPublishDropOldest(b *testing.B) {
	var br topic.Broker
	_, cancel := br.Subscribe(topic.Buffer[Value](4), topic.Overflow[Value](topic.DropOldest))
	defer cancel()
	for range 4 {
		br.Publish(value)
	}
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(value)
	}
}

// BenchmarkPublishOnLoss publishes to a full subscription with an OnLoss
// function: the slow path that reports each loss.
func BenchmarkPublishOnLoss(b *testing.B) {
	var br topic.Broker
	var lost int
	_, cancel := br.Subscribe(topic.OnLoss(func(topic.Loss[Value]) { lost++ }))
	defer cancel()
	br.Publish(value)
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(value)
	}
}

// burst is a value of the handler benchmarks; the last of a burst says so.
type burst struct {
	N    int
	Last bool
}

const burstLen = 512

// publishBursts publishes b.N values in bursts of burstLen into a queue of
// twice that, waiting after each burst for the consumer to signal done, so
// that nothing is dropped and the consumer is never idle within a burst.
func publishBursts(b *testing.B, br *topic.Broker, done <-chan struct{}) {
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; {
		k := min(burstLen, b.N-n)
		for i := range k {
			br.Publish(burst{N: n + i, Last: i == k-1})
		}
		<-done
		n += k
	}
}

// BenchmarkHandler passes values through a handler whose function does
// nothing but signal the end of a burst: the handler's own cost per value.
func BenchmarkHandler(b *testing.B) {
	var br topic.Broker
	done := make(chan struct{})
	stop := br.Handle(func(_ context.Context, v burst) error {
		if v.Last {
			done <- struct{}{}
		}
		return nil
	}, topic.Buffer[burst](2*burstLen))
	publishBursts(b, &br, done)
	b.StopTimer()
	stop()
}

// BenchmarkHandlerAtLeastOnce is the same through an at-least-once handler
// whose calls succeed.
func BenchmarkHandlerAtLeastOnce(b *testing.B) {
	var br topic.Broker
	done := make(chan struct{})
	stop := br.Handle(func(_ context.Context, v burst) error {
		if v.Last {
			done <- struct{}{}
		}
		return nil
	}, topic.Buffer[burst](2*burstLen), topic.Retry[burst](topic.RetryPolicy{Attempts: 3}))
	publishBursts(b, &br, done)
	b.StopTimer()
	stop()
}

// BenchmarkHandlerBaseline is the hand-written equivalent of a handler: a
// goroutine ranging over a channel subscription, calling the function.
func BenchmarkHandlerBaseline(b *testing.B) {
	var br topic.Broker
	done := make(chan struct{})
	f := func(_ context.Context, v burst) error {
		if v.Last {
			done <- struct{}{}
		}
		return nil
	}
	ch, cancel := br.Subscribe(topic.Buffer[burst](2 * burstLen))
	ended := make(chan struct{})
	go func() {
		ctx := context.Background()
		for v := range ch {
			_ = f(ctx, v)
		}
		close(ended)
	}()
	publishBursts(b, &br, done)
	b.StopTimer()
	cancel()
	<-ended
}

// BenchmarkHandlerMemory reports the memory held by each of 10,000 idle
// handlers, goroutine stacks included.
func BenchmarkHandlerMemory(b *testing.B) {
	const n = 10000
	var before, after runtime.MemStats
	f := func(context.Context, Value) error { return nil }
	for b.Loop() {
		var br topic.Broker
		stops := make([]func(), n)
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range stops {
			stops[i] = br.Handle(f)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := float64(after.HeapAlloc - before.HeapAlloc)
		stack := float64(after.StackInuse - before.StackInuse)
		b.ReportMetric(heap/n, "heap-B/handler")
		b.ReportMetric(stack/n, "stack-B/handler")
		b.ReportMetric((heap+stack)/n, "B/handler")
		if err := br.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// Pair is a 16-byte value, for the retained-type benchmarks.
type Pair struct{ A, B int64 }

// BenchmarkPublishRetained publishes a retained type to one drained
// subscription: BenchmarkPublishDirect plus the sequencing point, the
// timestamp and the append.
func BenchmarkPublishRetained(b *testing.B) {
	var br topic.Broker
	br.Retain[Value](topic.Retention{Count: 1024})
	ch, cancel := br.Subscribe[Value]()
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(value)
		<-ch
	}
}

// BenchmarkPublishRetainedParallel publishes one retained type from
// GOMAXPROCS goroutines to a subscription drained by its own goroutine: the
// cost of the total order.
func BenchmarkPublishRetainedParallel(b *testing.B) {
	var br topic.Broker
	br.Retain[Value](topic.Retention{Count: 1024})
	publishParallelOneType(b, &br)
}

// BenchmarkReplay subscribes with the replay of 10,000 retained values and
// reports the cost per value replayed.
func BenchmarkReplay(b *testing.B) {
	const n = 10000
	var br topic.Broker
	br.Retain[Pair](topic.Retention{Count: n})
	for i := range n {
		br.Publish(Pair{int64(i), int64(i)})
	}
	b.ReportAllocs()
	for b.Loop() {
		ch, cancel := br.Subscribe(topic.Buffer[Pair](n), topic.Replay[Pair](topic.Earliest()))
		if len(ch) != n {
			b.Fatalf("replayed %d, want %d", len(ch), n)
		}
		cancel()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/value")
}

// BenchmarkRetainedMemory reports the heap held per value of a retained
// 16-byte type, over 100,000 values.
func BenchmarkRetainedMemory(b *testing.B) {
	const n = 100000
	var before, after runtime.MemStats
	for b.Loop() {
		var br topic.Broker
		runtime.GC()
		runtime.ReadMemStats(&before)
		// NoTime: a log's clock timer would keep the log of the round
		// before alive (it holds the clock) into this round's first
		// reading, and the difference negative. A value's time is
		// kept all the same.
		br.Retain[Pair](topic.Retention{Count: n, NoTime: true})
		for i := range n {
			br.Publish(Pair{int64(i), int64(i)})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/value")
		runtime.KeepAlive(&br)
	}
}

// Followers (see topic.Follow).

// BenchmarkPublishRetainedFollowed publishes a retained type that one
// follower reads, one record per publication, on the same goroutine: against
// BenchmarkPublishDirect, the cost of the log.
func BenchmarkPublishRetainedFollowed(b *testing.B) {
	var br topic.Broker
	br.Retain[Value](topic.Retention{Count: 1024})
	f := br.Follow[Value]()
	defer f.Close()
	buf := make([]topic.Record[Value], 1)
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(value)
		f.Read(buf)
	}
}

// BenchmarkPublishRetainedFollowedNoTime is BenchmarkPublishRetainedFollowed
// with Retention.NoTime: no clock reading per publication.
func BenchmarkPublishRetainedFollowedNoTime(b *testing.B) {
	var br topic.Broker
	br.Retain[Value](topic.Retention{Count: 1024, NoTime: true})
	f := br.Follow[Value]()
	defer f.Close()
	buf := make([]topic.Record[Value], 1)
	b.ReportAllocs()
	for b.Loop() {
		br.Publish(value)
		f.Read(buf)
	}
}

// BenchmarkClockReading is one reading of the monotonic clock, as a retained
// type takes per publication (time.Since of a fixed epoch): the floor of
// the retained rows that are not NoTime.
func BenchmarkClockReading(b *testing.B) {
	epoch := time.Now()
	var sum time.Duration
	for b.Loop() {
		sum += time.Since(epoch)
	}
	runtime.KeepAlive(sum)
}

// BenchmarkPublishRetainedFollowedParallel publishes one retained type from
// GOMAXPROCS goroutines while a follower reads it on a goroutine of its own.
func BenchmarkPublishRetainedFollowedParallel(b *testing.B) {
	var br topic.Broker
	br.Retain[Value](topic.Retention{Count: 1 << 16})
	f := br.Follow[Value]()
	done := make(chan struct{})
	go func() {
		buf := make([]topic.Record[Value], 256)
		for f.Wait(context.Background()) == nil {
			f.Read(buf)
		}
		close(done)
	}()
	b.ReportAllocs()
	parallel(b, func(_, n int) {
		for range n {
			br.Publish(value)
		}
	})
	f.Close()
	<-done
}

// BenchmarkPublishRetainedManyPublishers publishes one retained type from
// 8192 goroutines at once, far more than Ps: most of them find the
// sequencing point taken and queue on it. A wake-up per publication, or a
// queue whose front costs its length, would show here as microseconds.
func BenchmarkPublishRetainedManyPublishers(b *testing.B) {
	var br topic.Broker
	br.Retain[Value](topic.Retention{Count: 1024, NoTime: true})
	br.Publish(value) // makes the log
	const publishers = 8192
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range publishers {
		n := share(b.N, publishers, i)
		wg.Go(func() {
			<-start
			for range n {
				br.Publish(value)
			}
		})
	}
	b.ReportAllocs()
	b.ResetTimer()
	close(start)
	wg.Wait()
}

// BenchmarkPublishFollowers publishes a retained type that n followers
// follow without waiting (they are behind, or read later): a publication
// does no work per follower, so the rows are flat in n.
func BenchmarkPublishFollowers(b *testing.B) {
	for _, n := range []int{1, 100, 10000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			var br topic.Broker
			br.Retain[Value](topic.Retention{Count: 1024})
			fs := make([]*topic.Follower[Value], n)
			for i := range fs {
				fs[i] = br.Follow[Value]()
			}
			b.ReportAllocs()
			for b.Loop() {
				br.Publish(value)
			}
			b.StopTimer()
			for _, f := range fs {
				f.Close()
			}
		})
	}
}

// BenchmarkPublishWakeFollowers publishes one value at a time to n
// followers parked in Next, each on its goroutine, and waits until all have
// read it: the cost of waking the followers that wait, per publication and
// per follower woken.
func BenchmarkPublishWakeFollowers(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			var br topic.Broker
			br.Retain[Value](topic.Retention{Count: 1024})
			read := make(chan struct{}, n)
			var wg sync.WaitGroup
			fs := make([]*topic.Follower[Value], n)
			for i := range fs {
				f := br.Follow[Value]()
				fs[i] = f
				wg.Go(func() {
					for {
						if _, err := f.Next(context.Background()); err != nil {
							return
						}
						read <- struct{}{}
					}
				})
			}
			b.ReportAllocs()
			for b.Loop() {
				br.Publish(value)
				for range n {
					<-read
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/follower")
			for _, f := range fs {
				f.Close()
			}
			wg.Wait()
		})
	}
}

// BenchmarkRawWake is the floor of BenchmarkPublishWakeFollowers: n
// goroutines, each parked on a channel of its own, woken by a send to each
// and answering on a shared channel.
func BenchmarkRawWake(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			read := make(chan struct{}, n)
			wake := make([]chan struct{}, n)
			var wg sync.WaitGroup
			for i := range wake {
				c := make(chan struct{}, 1)
				wake[i] = c
				wg.Go(func() {
					for range c {
						read <- struct{}{}
					}
				})
			}
			for b.Loop() {
				for _, c := range wake {
					c <- struct{}{}
				}
				for range n {
					<-read
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/follower")
			for _, c := range wake {
				close(c)
			}
			wg.Wait()
		})
	}
}

// BenchmarkWakeHandler publishes one value at a time to an idle handler and
// waits until its function has taken it: the cost of waking a handler's
// worker, a plain one (mode=handler) or one following the log of a
// retained type (mode=handler-follower), against BenchmarkRawWake/n=1.
func BenchmarkWakeHandler(b *testing.B) {
	for _, follow := range []bool{false, true} {
		name := "mode=handler"
		if follow {
			name = "mode=handler-follower"
		}
		b.Run(name, func(b *testing.B) {
			var br topic.Broker
			defer br.Shutdown(context.Background())
			opt := topic.Buffer[Value](16)
			if follow {
				br.Retain[Value](topic.Retention{Count: 1024})
				opt = topic.Follow[Value]()
			}
			took := make(chan struct{}, 1)
			br.Handle(func(context.Context, Value) error {
				took <- struct{}{}
				return nil
			}, opt)
			b.ReportAllocs()
			for b.Loop() {
				br.Publish(value)
				<-took
			}
		})
	}
}

// BenchmarkFollowerRead reads a retained log of 4096 values with a follower,
// in batches of n; ns/value is the figure to read against BenchmarkRawSend.
func BenchmarkFollowerRead(b *testing.B) {
	followerRead(b, retainValues)
}

// keptValues is how many values the read benchmarks' logs keep.
const keptValues = 4096

// retainValues makes Value a retained type of br keeping keptValues
// values, and publishes as many.
func retainValues(br *topic.Broker) {
	br.Retain[Value](topic.Retention{Count: keptValues})
	for range keptValues {
		br.Publish(value)
	}
}

// BenchmarkFollowerReadKeyed is BenchmarkFollowerRead on a log of
// RetainLatest holding 4096 keys, one value each.
func BenchmarkFollowerReadKeyed(b *testing.B) {
	followerRead(b, func(br *topic.Broker) {
		br.RetainLatest(func(v Value) int64 { return v.A }, topic.Retention{Count: keptValues})
		for i := range keptValues {
			br.Publish(Value{A: int64(i)})
		}
	})
}

// followerRead reads, in batches of 1 and of 64, with a follower from the
// earliest of the log that fill retains and fills on a broker, over and
// over (a read past the end seeks back to offset 0).
func followerRead(b *testing.B, fill func(*topic.Broker)) {
	for _, n := range []int{1, 64} {
		b.Run("batch="+strconv.Itoa(n), func(b *testing.B) {
			var br topic.Broker
			fill(&br)
			f := br.Follow(topic.Replay[Value](topic.Earliest()))
			defer f.Close()
			buf := make([]topic.Record[Value], n)
			b.ReportAllocs()
			read := 0
			for b.Loop() {
				k := f.Read(buf)
				if k == 0 {
					f.Seek(0)
				}
				read += k
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(read, 1)), "ns/value")
		})
	}
}

// BenchmarkRead reads a retained log of 4096 values with Broker.Read, up to
// max records a call, each call a new slice.
func BenchmarkRead(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run("max="+strconv.Itoa(n), func(b *testing.B) {
			var br topic.Broker
			retainValues(&br)
			b.ReportAllocs()
			var from uint64
			read := 0
			for b.Loop() {
				recs, next, _ := br.Read[Value](from, n)
				if from = next; from == keptValues {
					from = 0 // no call past the end: each allocates its slice
				}
				read += len(recs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(read, 1)), "ns/value")
		})
	}
}

// BenchmarkFollowerReplay reads 10,000 retained values with a new follower
// from the earliest: the replay of a follower.
func BenchmarkFollowerReplay(b *testing.B) {
	const n = 10000
	var br topic.Broker
	br.Retain[Pair](topic.Retention{Count: n})
	for i := range n {
		br.Publish(Pair{int64(i), int64(i)})
	}
	buf := make([]topic.Record[Pair], 256)
	b.ReportAllocs()
	for b.Loop() {
		f := br.Follow(topic.Replay[Pair](topic.Earliest()))
		got := 0
		for k := f.Read(buf); k > 0; k = f.Read(buf) {
			got += k
		}
		if got != n {
			b.Fatalf("read %d, want %d", got, n)
		}
		f.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/value")
}

// BenchmarkHandlerFollower is BenchmarkHandler with a handler that follows
// the log of a retained type instead of a queue.
func BenchmarkHandlerFollower(b *testing.B) {
	var br topic.Broker
	br.Retain[burst](topic.Retention{Count: 4 * burstLen})
	done := make(chan struct{})
	stop := br.Handle(func(_ context.Context, v burst) error {
		if v.Last {
			done <- struct{}{}
		}
		return nil
	}, topic.Follow[burst]())
	publishBursts(b, &br, done)
	b.StopTimer()
	stop()
}

// BenchmarkFollowerMemory reports the memory held by each of 10,000 idle
// followers of one retained type.
func BenchmarkFollowerMemory(b *testing.B) {
	const n = 10000
	var before, after runtime.MemStats
	for b.Loop() {
		var br topic.Broker
		br.Retain[Value](topic.Retention{Count: 16})
		fs := make([]*topic.Follower[Value], n)
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range fs {
			fs[i] = br.Follow[Value]()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/follower")
		for _, f := range fs {
			f.Close()
		}
	}
}

// BenchmarkGuardAlternatives sets the guard (a compare-and-swap takes the
// publisher's slot, a plain increment gives it back) beside the other ways a
// publication could tell a canceller it is sending, each as one publication
// pays it: two atomic additions (in and out, what the guard took before it
// counted out on counters of the Ps, then on slots), a single atomic
// addition (the one locked instruction the guard keeps), an epoch read
// without a write (what a publisher would pay if the canceller could learn
// of its quiescence without it), a read lock, and a mutex. Only the guard,
// the two additions and the locks are correct protocols; the others are
// floors, what a protocol of their kind could cost at best.
func BenchmarkGuardAlternatives(b *testing.B) {
	b.Run("guard", func(b *testing.B) {
		g := topic.NewGuard()
		for b.Loop() {
			g.EnterExit()
		}
	})
	b.Run("two-adds", func(b *testing.B) {
		var n atomic.Int64
		for b.Loop() {
			n.Add(1)
			n.Add(-1)
		}
	})
	b.Run("one-add", func(b *testing.B) {
		var n atomic.Int64
		for b.Loop() {
			n.Add(1)
		}
	})
	b.Run("epoch-read", func(b *testing.B) {
		var epoch atomic.Uint32
		var sink uint32
		for b.Loop() {
			sink += epoch.Load()
		}
		_ = sink
	})
	b.Run("rwmutex", func(b *testing.B) {
		var mu sync.RWMutex
		for b.Loop() {
			mu.RLock()
			//lint:ignore SA2001 the empty section is the point
			mu.RUnlock()
		}
	})
	b.Run("mutex", func(b *testing.B) {
		var mu sync.Mutex
		for b.Loop() {
			mu.Lock()
			//lint:ignore SA2001 the empty section is the point
			mu.Unlock()
		}
	})
}
