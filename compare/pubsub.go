package compare

import (
	"sync"

	"github.com/cskr/pubsub/v2"
)

// pubsubBus is github.com/cskr/pubsub/v2: one goroutine owns the topics and
// serves every call through a channel. Pub waits until each subscriber's
// channel has room; TryPub drops for a subscriber whose channel is full.
type pubsubBus struct {
	ps  *pubsub.PubSub[string, Value]
	try bool           // publish with TryPub rather than Pub
	wg  sync.WaitGroup // the counting subscribers' goroutines
}

func newPubsubBlocking() Bus { return &pubsubBus{ps: pubsub.New[string, Value](Capacity)} }

func newPubsubTry() Bus { return &pubsubBus{ps: pubsub.New[string, Value](Capacity), try: true} }

func (p *pubsubBus) Publisher(i int) func(Value) {
	name := topicNames[i]
	if p.try {
		return func(v Value) { p.ps.TryPub(v, name) }
	}
	return func(v Value) { p.ps.Pub(v, name) }
}

func (p *pubsubBus) Subscribe(i int, c *Counter) {
	ch := p.ps.Sub(topicNames[i])
	p.wg.Go(func() {
		for v := range ch {
			c.Take(v)
		}
	})
}

func (p *pubsubBus) SubscribeStuck(i int) Stuck {
	return &stuckChan[Value]{ch: p.ps.Sub(topicNames[i])}
}

// Close shuts the library down, which closes every subscriber's channel once
// the publications before it have been served.
func (p *pubsubBus) Close() {
	p.ps.Shutdown()
	p.wg.Wait()
}
