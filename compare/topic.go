package compare

import (
	"sync"

	"github.com/seedaa7df82c/topic"
)

// topicBus is this library. A topic is a Go type, so the numbered topics are
// the distinct types topicValue[H, L]; see typed.go.
type topicBus struct {
	b       topic.Broker
	cancels []func()       // appended by Subscribe and SubscribeStuck
	wg      sync.WaitGroup // the counting subscribers' goroutines
}

func newTopicBus() Bus { return new(topicBus) }

func (tb *topicBus) Publisher(i int) func(Value) { return typed[i].publisher(&tb.b) }

func (tb *topicBus) Subscribe(i int, c *Counter) {
	tb.cancels = append(tb.cancels, typed[i].subscribe(&tb.b, c, &tb.wg))
}

// CountedLosses is the broker's own count of what the counting subscribers
// lost (the subscriptions named "counting").
func (tb *topicBus) CountedLosses() int64 {
	var n uint64
	for _, st := range tb.b.Subscriptions() {
		if st.Name == "counting" {
			n += st.Lost.Total()
		}
	}
	return int64(n)
}

func (tb *topicBus) SubscribeStuck(i int) Stuck {
	s, cancel := typed[i].subscribeStuck(&tb.b)
	tb.cancels = append(tb.cancels, cancel)
	return s
}

// Close cancels every subscription, which closes its channel and so ends its
// goroutine once it has received what the channel held.
func (tb *topicBus) Close() {
	for _, cancel := range tb.cancels {
		cancel()
	}
	tb.wg.Wait()
}

// A topicType is one numbered topic of topicBus, for its type T.
type topicType struct {
	publisher      func(b *topic.Broker) func(Value)
	subscribe      func(b *topic.Broker, c *Counter, wg *sync.WaitGroup) (cancel func())
	subscribeStuck func(b *topic.Broker) (Stuck, func())
}

func newTopicType[T ~struct{ A, B, C, D int64 }]() topicType {
	return topicType{
		publisher: func(b *topic.Broker) func(Value) {
			return func(v Value) { b.Publish(T(v)) }
		},
		subscribe: func(b *topic.Broker, c *Counter, wg *sync.WaitGroup) func() {
			ch, cancel := b.Subscribe(topic.Buffer[T](Capacity), topic.Name[T]("counting"))
			wg.Go(func() {
				for range ch {
					c.Add()
				}
			})
			return cancel
		},
		subscribeStuck: func(b *topic.Broker) (Stuck, func()) {
			ch, cancel := b.Subscribe(topic.Buffer[T](Capacity))
			return &stuckChan[T]{ch: ch}, cancel
		},
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
