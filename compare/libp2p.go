package compare

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/p2p/host/eventbus"
)

// libp2pBus is the event bus of github.com/libp2p/go-libp2p
// (p2p/host/eventbus), used as its documentation shows: an Emitter per
// event type, a Subscription per subscriber with a buffer of
// BufSize(Capacity) whose Out channel it ranges over. A type is the
// topic, named by a pointer to it: the numbered topics are the same
// hundred types as topic's. Emit waits until every subscriber's buffer
// has room.
type libp2pBus struct {
	bus     event.Bus
	closers []func() error // the emitters and the subscriptions
	wg      sync.WaitGroup // the counting subscribers' goroutines
}

func newLibp2p() Bus { return &libp2pBus{bus: eventbus.NewBus()} }

func (l *libp2pBus) Publisher(i int) func(Value) {
	emit, closeEmitter := typed[i].libp2p.publisher(l.bus)
	l.closers = append(l.closers, closeEmitter)
	return emit
}

func (l *libp2pBus) subscribe(i int) event.Subscription {
	s, err := l.bus.Subscribe(typed[i].libp2p.key, eventbus.BufSize(Capacity))
	if err != nil {
		panic(err) // only for a bad type or option
	}
	l.closers = append(l.closers, s.Close)
	return s
}

func (l *libp2pBus) Subscribe(i int, c *Counter) {
	s := l.subscribe(i)
	take := typed[i].libp2p.take
	l.wg.Go(func() {
		for e := range s.Out() {
			c.Take(take(e))
		}
	})
}

func (l *libp2pBus) SubscribeStuck(i int) Stuck {
	s := l.subscribe(i)
	return releaseFunc(func() {
		go func() {
			for range s.Out() {
			}
		}()
	})
}

// Close closes every emitter and subscription: a subscription's Out
// channel is then closed.
func (l *libp2pBus) Close() {
	for _, c := range l.closers {
		_ = c() // only an error if closed twice
	}
	l.wg.Wait()
}

// A libp2pType is one numbered topic of libp2pBus, for its type T.
type libp2pType struct {
	key       any // a *T: what names the topic
	publisher func(bus event.Bus) (emit func(Value), close func() error)
	take      func(e any) Value // the Value of an event received
}

func newLibp2pType[T ~struct{ A, B, C, D int64 }]() libp2pType {
	return libp2pType{
		key: new(T),
		publisher: func(bus event.Bus) (func(Value), func() error) {
			em, err := bus.Emitter(new(T))
			if err != nil {
				panic(err) // only for a bad type or option
			}
			return func(v Value) {
				// An error only once closed, as Close may close the emitter
				// under a publication waiting for a stuck subscriber: the
				// value is then not published.
				_ = em.Emit(T(v))
			}, em.Close
		},
		take: func(e any) Value { return Value(e.(T)) },
	}
}
