package compare

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seedaa7df82c/topic"
)

// topicBus is this library. A topic is a Go type, so the numbered topics are
// the distinct types topicValue[H, L]; see typed.go. Its counting
// subscribers receive in one of three ways (mode).
type topicBus struct {
	b       topic.Broker
	mode    topicMode
	cancels []func()       // appended by Subscribe and SubscribeStuck
	wg      sync.WaitGroup // the counting subscribers' goroutines
	// Per topic, for a paced mode: the counting subscribers, and the
	// publications made.
	counters  [Topics][]*Counter
	published [Topics]atomic.Int64
}

// topicMode is how a topicBus's subscribers receive.
type topicMode uint8

const (
	// topicLossy: Subscribe, a channel of Capacity; a full channel drops
	// the value, counted, and the publisher never waits.
	topicLossy topicMode = iota
	// topicFollower: the type is retained, and each subscriber is a
	// Follower that reads what the log has, followerBatch records at a time:
	// the log is its queue, and it loses nothing while it is less than
	// retained values behind.
	topicFollower
	// topicHandler: the type is retained, and each subscriber is a handler
	// (Handle) that follows the log, with Retry: at least once.
	topicHandler
)

const (
	// retained is what a retained topic's log keeps: a paced publisher
	// stays within half of it of its slowest counting subscriber.
	retained = 1 << 14
	// followerBatch is how many records a follower reads at once.
	followerBatch = 64
	// paceEvery is how many publications a paced publisher makes between
	// two looks at its subscribers' counts.
	paceEvery = 64
)

func newTopicBus() Bus       { return new(topicBus) }
func newTopicFollowers() Bus { return &topicBus{mode: topicFollower} }
func newTopicHandlers() Bus  { return &topicBus{mode: topicHandler} }

func (tb *topicBus) Publisher(i int) func(Value) {
	publish := typed[i].publisher(&tb.b, tb.mode != topicLossy)
	if tb.mode == topicLossy {
		return publish
	}
	n := &tb.published[i]
	return func(v Value) {
		publish(v)
		if k := n.Add(1); k%paceEvery == 0 {
			tb.pace(i, k)
		}
	}
}

// pace waits while the slowest counting subscriber of topic i is more than
// half what the log keeps behind k publications; for a second at most
// without progress, so that a subscriber that lost values (they are
// counted) holds the publisher no longer.
func (tb *topicBus) pace(i int, k int64) {
	cs := tb.counters[i]
	slowest := func() int64 {
		s := k
		for _, c := range cs {
			s = min(s, c.Load())
		}
		return s
	}
	last, since := slowest(), time.Now()
	for s := last; k-s > retained/2; s = slowest() {
		if s != last {
			last, since = s, time.Now()
		} else if time.Since(since) > time.Second {
			return
		}
		runtime.Gosched()
	}
}

func (tb *topicBus) Subscribe(i int, c *Counter) {
	tb.counters[i] = append(tb.counters[i], c)
	tb.cancels = append(tb.cancels, typed[i].subscribe(&tb.b, tb.mode, c, &tb.wg))
}

// CountedLosses is the broker's own count of what the counting subscribers
// lost (the subscriptions without a name: a stuck one is named).
func (tb *topicBus) CountedLosses() int64 {
	var n uint64
	for _, st := range tb.b.Subscriptions() {
		if st.Name == "" {
			n += st.Lost.Total()
		}
	}
	return int64(n)
}

func (tb *topicBus) SubscribeStuck(i int) Stuck {
	s, cancel := typed[i].subscribeStuck(&tb.b, tb.mode)
	tb.cancels = append(tb.cancels, cancel)
	return s
}

// Close cancels every subscription, which ends its goroutine once it has
// received what it held.
func (tb *topicBus) Close() {
	for _, cancel := range tb.cancels {
		cancel()
	}
	tb.wg.Wait()
}

// A topicType is one numbered topic, for its type T: of topicBus, and of
// the other libraries whose topics are types.
type topicType struct {
	tailscale tailscaleType
	libp2p    libp2pType

	publisher      func(b *topic.Broker, retain bool) func(Value)
	subscribe      func(b *topic.Broker, m topicMode, c *Counter, wg *sync.WaitGroup) (cancel func())
	subscribeStuck func(b *topic.Broker, m topicMode) (Stuck, func())
}

func newTopicType[T ~struct{ A, B, C, D int64 }]() topicType {
	return topicType{
		tailscale: newTailscaleType[T](),
		libp2p:    newLibp2pType[T](),
		publisher: func(b *topic.Broker, retain bool) func(Value) {
			if retain {
				b.Retain[T](topic.Retention{Count: retained})
			}
			return func(v Value) { b.Publish(T(v)) }
		},
		subscribe: func(b *topic.Broker, m topicMode, c *Counter, wg *sync.WaitGroup) func() {
			switch m {
			case topicFollower:
				b.Retain[T](topic.Retention{Count: retained})
				f := b.Follow[T]()
				wg.Go(func() { readAll(f, c) })
				return f.Close
			case topicHandler:
				b.Retain[T](topic.Retention{Count: retained})
				return b.Handle(func(_ context.Context, v T) error {
					c.Take(Value(v))
					return nil
				}, topic.Follow[T](), topic.Retry[T](topic.RetryPolicy{Attempts: 3, Base: time.Millisecond}))
			}
			ch, cancel := b.Subscribe(topic.Buffer[T](Capacity))
			wg.Go(func() {
				for v := range ch {
					c.Take(Value(v))
				}
			})
			return cancel
		},
		subscribeStuck: func(b *topic.Broker, m topicMode) (Stuck, func()) {
			if m != topicLossy {
				b.Retain[T](topic.Retention{Count: retained})
				f := b.Follow[T](topic.Name[T]("stuck"))
				return &stuckFollower[T]{f: f}, f.Close
			}
			ch, cancel := b.Subscribe(topic.Buffer[T](Capacity), topic.Name[T]("stuck"))
			return &stuckChan[T]{ch: ch}, cancel
		},
	}
}

// readAll reads f in batches until it is closed, counting into c.
func readAll[T ~struct{ A, B, C, D int64 }](f *topic.Follower[T], c *Counter) {
	buf := make([]topic.Record[T], followerBatch)
	for {
		if n := f.Read(buf); n > 0 {
			if c.lat != nil {
				for _, r := range buf[:n] {
					c.record(Value(r.Value))
				}
			}
			c.AddN(int64(n))
			continue
		}
		if f.Wait(context.Background()) != nil {
			return // closed
		}
	}
}

// stuckChan is a stuck subscriber of a channel library: nothing receives
// from ch until Release.
type stuckChan[T any] struct {
	ch   <-chan T
	once sync.Once
}

// Release starts a goroutine that discards what ch delivers until it is
// closed.
func (s *stuckChan[T]) Release() {
	s.once.Do(func() {
		go func() {
			for range s.ch {
			}
		}()
	})
}

// stuckFollower is a stuck follower: nothing reads it until Release.
type stuckFollower[T ~struct{ A, B, C, D int64 }] struct {
	f    *topic.Follower[T]
	once sync.Once
}

// Release starts a goroutine that reads and discards until f is closed.
func (s *stuckFollower[T]) Release() {
	s.once.Do(func() { go readAll(s.f, NewCounter(0)) })
}
