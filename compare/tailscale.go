package compare

import (
	"sync"

	"tailscale.com/util/eventbus"
)

// tailscaleBus is tailscale.com/util/eventbus, used as its package
// documentation shows: a Client per component (here one for the
// publishers, one per subscriber), Publish[T] and Subscribe[T] on a
// client, a subscriber selecting over Events and Done. A type is the topic,
// as in topic: the numbered topics are the same hundred types. The bus
// queues every event in its own goroutine and in a queue per client,
// without bound: a publication never blocks, and a stuck subscriber's
// queue grows with every publication.
type tailscaleBus struct {
	bus     *eventbus.Bus
	pubs    *eventbus.Client // the publishers'
	clients []*eventbus.Client
	wg      sync.WaitGroup // the counting subscribers' goroutines
}

func newTailscale() Bus {
	b := eventbus.New()
	return &tailscaleBus{bus: b, pubs: b.Client("publishers")}
}

func (t *tailscaleBus) Publisher(i int) func(Value) { return typed[i].tailscale.publisher(t.pubs) }

func (t *tailscaleBus) client(name string) *eventbus.Client {
	c := t.bus.Client(name)
	t.clients = append(t.clients, c)
	return c
}

func (t *tailscaleBus) Subscribe(i int, c *Counter) {
	typed[i].tailscale.subscribe(t.client("counting"), c, &t.wg)
}

func (t *tailscaleBus) SubscribeStuck(i int) Stuck {
	return typed[i].tailscale.subscribeStuck(t.client("stuck"))
}

// Close closes the bus, which closes every client: a subscriber's Done
// channel is then closed.
func (t *tailscaleBus) Close() {
	t.bus.Close()
	t.wg.Wait()
}

// A tailscaleType is one numbered topic of tailscaleBus, for its type T.
type tailscaleType struct {
	publisher      func(c *eventbus.Client) func(Value)
	subscribe      func(c *eventbus.Client, cnt *Counter, wg *sync.WaitGroup)
	subscribeStuck func(c *eventbus.Client) Stuck
}

func newTailscaleType[T ~struct{ A, B, C, D int64 }]() tailscaleType {
	return tailscaleType{
		publisher: func(c *eventbus.Client) func(Value) {
			p := eventbus.Publish[T](c)
			return func(v Value) { p.Publish(T(v)) }
		},
		subscribe: func(c *eventbus.Client, cnt *Counter, wg *sync.WaitGroup) {
			s := eventbus.Subscribe[T](c)
			wg.Go(func() {
				for {
					select {
					case v := <-s.Events():
						cnt.Take(Value(v))
					case <-s.Done():
						return
					}
				}
			})
		},
		subscribeStuck: func(c *eventbus.Client) Stuck {
			s := eventbus.Subscribe[T](c)
			return releaseFunc(func() {
				go func() {
					for {
						select {
						case <-s.Events():
						case <-s.Done():
							return
						}
					}
				}()
			})
		},
	}
}

// releaseFunc is a Stuck whose Release calls its function once.
func releaseFunc(f func()) Stuck { return &onceRelease{f: f} }

type onceRelease struct {
	once sync.Once
	f    func()
}

func (r *onceRelease) Release() { r.once.Do(r.f) }
