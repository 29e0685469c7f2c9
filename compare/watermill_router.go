package compare

import (
	"context"
	"encoding/binary"
	"strconv"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
)

// watermillRouter is how watermill's users get at-least-once delivery: a
// Router over the GoChannel Pub/Sub, with the Retry and PoisonQueue
// middleware its documentation shows, and a handler per subscriber
// (AddConsumerHandler) whose messages the router acknowledges when it
// returns nil; a message whose retries fail goes to the poison queue. The
// GoChannel is configured as watermillBus's.
type watermillRouter struct {
	g       *gochannel.GoChannel
	r       *message.Router
	handled int                // handlers added, for their names
	running chan struct{}      // closed once Run has started, nil before
	done    chan struct{}      // closed when Run returns
	ctx     context.Context    // Run's
	cancel  context.CancelFunc // Run's
}

func newWatermillRouter() Bus {
	g := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: Capacity}, nil)
	r, err := message.NewRouter(message.RouterConfig{CloseTimeout: time.Second}, watermill.NopLogger{})
	if err != nil {
		panic(err) // only for a bad configuration
	}
	poison, err := middleware.PoisonQueue(g, "poison")
	if err != nil {
		panic(err) // only for an empty topic
	}
	r.AddMiddleware(middleware.Retry{MaxRetries: 3, InitialInterval: time.Millisecond, Multiplier: 2}.Middleware, poison)
	ctx, cancel := context.WithCancel(context.Background())
	return &watermillRouter{g: g, r: r, ctx: ctx, cancel: cancel}
}

func (w *watermillRouter) Publisher(i int) func(Value) {
	name := topicNames[i]
	return func(v Value) {
		if err := w.g.Publish(name, message.NewMessage(watermill.NewUUID(), encode(v))); err != nil {
			panic(err) // only once closed
		}
	}
}

// handle adds a handler of topic i's messages, and runs it: the router
// starts with its first handler (a router without one stops at once), and
// runs those added later with RunHandlers.
func (w *watermillRouter) handle(i int, f func(*message.Message) error) {
	w.handled++
	w.r.AddConsumerHandler("h"+strconv.Itoa(w.handled), topicNames[i], w.g, f)
	if w.running == nil {
		w.running, w.done = w.r.Running(), make(chan struct{})
		go func() {
			defer close(w.done)
			if err := w.r.Run(w.ctx); err != nil {
				panic(err)
			}
		}()
		<-w.running
		return
	}
	if err := w.r.RunHandlers(w.ctx); err != nil {
		panic(err) // only if not running
	}
}

func (w *watermillRouter) Subscribe(i int, c *Counter) {
	w.handle(i, func(msg *message.Message) error {
		c.Take(Value{A: int64(binary.LittleEndian.Uint64(msg.Payload))}) // its time: see encode
		return nil
	})
}

func (w *watermillRouter) SubscribeStuck(i int) Stuck {
	release := make(chan struct{})
	w.handle(i, func(*message.Message) error {
		<-release
		return nil
	})
	var once sync.Once
	return releaseFunc(func() { once.Do(func() { close(release) }) })
}

// Close closes the router, which waits up to its CloseTimeout for the
// handlers to return, then the Pub/Sub.
func (w *watermillRouter) Close() {
	_ = w.r.Close() // an error only when handlers outlast CloseTimeout
	w.cancel()
	if w.done != nil {
		<-w.done
	}
	if err := w.g.Close(); err != nil {
		panic(err) // GoChannel's Close returns no error
	}
}
