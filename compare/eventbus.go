package compare

import (
	"sync"

	"github.com/asaskevich/EventBus"
)

// eventBus is github.com/asaskevich/EventBus: callbacks called through
// reflection with the published arguments. A synchronous callback runs in
// Publish; an asynchronous one runs in a goroutine Publish starts for it.
// Asynchronous callbacks are subscribed as the README shows, not
// transactional, so calls of one callback may overlap.
type eventBus struct {
	bus   EventBus.Bus
	async bool
}

func newEventBusSync() Bus { return &eventBus{bus: EventBus.New()} }

func newEventBusAsync() Bus { return &eventBus{bus: EventBus.New(), async: true} }

func (e *eventBus) Publisher(i int) func(Value) {
	name := topicNames[i]
	return func(v Value) { e.bus.Publish(name, v) }
}

func (e *eventBus) subscribe(i int, fn func(Value)) {
	var err error
	if e.async {
		err = e.bus.SubscribeAsync(topicNames[i], fn, false)
	} else {
		err = e.bus.Subscribe(topicNames[i], fn)
	}
	if err != nil {
		panic(err) // only for a callback that is not a function
	}
}

func (e *eventBus) Subscribe(i int, c *Counter) { e.subscribe(i, c.Take) }

func (e *eventBus) SubscribeStuck(i int) Stuck {
	s := &stuckCallback{release: make(chan struct{})}
	e.subscribe(i, func(Value) { <-s.release })
	return s
}

// Close waits for the asynchronous callbacks in progress; a synchronous
// callback has returned with its Publish. The library has nothing to close.
func (e *eventBus) Close() {
	if e.async {
		e.bus.WaitAsync()
	}
}

// stuckCallback is a stuck subscriber of a callback library: its callback
// does not return until Release.
type stuckCallback struct {
	release chan struct{}
	once    sync.Once
}

func (s *stuckCallback) Release() { s.once.Do(func() { close(s.release) }) }
