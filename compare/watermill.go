package compare

import (
	"context"
	"encoding/binary"
	"sync"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
)

// watermillBus is the GoChannel Pub/Sub of github.com/ThreeDotsLabs/watermill,
// used as its getting-started example shows: a message with a new UUID and a
// byte payload, subscribers that Ack each message. Publish hands every
// message to a goroutine per subscriber, which waits until the subscriber
// takes and acknowledges it. The logger is nil (no logging), since a logger's
// cost is not the broker's.
type watermillBus struct {
	g  *gochannel.GoChannel
	wg sync.WaitGroup // the counting subscribers' goroutines
}

func newWatermill() Bus {
	return &watermillBus{g: gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: Capacity}, nil)}
}

func (w *watermillBus) Publisher(i int) func(Value) {
	name := topicNames[i]
	return func(v Value) {
		msg := message.NewMessage(watermill.NewUUID(), encode(v))
		if err := w.g.Publish(name, msg); err != nil {
			panic(err) // only once closed
		}
	}
}

func (w *watermillBus) subscribe(i int) <-chan *message.Message {
	msgs, err := w.g.Subscribe(context.Background(), topicNames[i])
	if err != nil {
		panic(err) // only once closed
	}
	return msgs
}

func (w *watermillBus) Subscribe(i int, c *Counter) {
	msgs := w.subscribe(i)
	w.wg.Go(func() {
		for msg := range msgs {
			c.Take(Value{A: int64(binary.LittleEndian.Uint64(msg.Payload))}) // its time: see encode
			msg.Ack()
		}
	})
}

func (w *watermillBus) SubscribeStuck(i int) Stuck { return &stuckMessages{msgs: w.subscribe(i)} }

// Close closes the Pub/Sub, which discards the messages still in flight and
// closes every subscriber's channel.
func (w *watermillBus) Close() {
	if err := w.g.Close(); err != nil {
		panic(err) // GoChannel's Close returns no error
	}
	w.wg.Wait()
}

// encode is the payload of v: its four fields, little-endian.
func encode(v Value) []byte {
	p := make([]byte, 0, 32)
	p = binary.LittleEndian.AppendUint64(p, uint64(v.A))
	p = binary.LittleEndian.AppendUint64(p, uint64(v.B))
	p = binary.LittleEndian.AppendUint64(p, uint64(v.C))
	return binary.LittleEndian.AppendUint64(p, uint64(v.D))
}

// stuckMessages is a stuck watermill subscriber: it neither takes nor
// acknowledges a message until Release.
type stuckMessages struct {
	msgs <-chan *message.Message
	once sync.Once
}

func (s *stuckMessages) Release() {
	s.once.Do(func() {
		go func() {
			for msg := range s.msgs {
				msg.Ack()
			}
		}()
	})
}
