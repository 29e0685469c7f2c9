package compare

import "sync"

// mutexBus is the plain baseline: what one writes by hand knowing the payload
// type. Topics are names; each maps to a slice of channels, read under a
// read lock. It sends as topic does, without blocking, dropping a value for a
// subscriber whose buffer is full, so the difference between the two is the
// cost of routing by type without a lock.
type mutexBus struct {
	mu   sync.RWMutex
	subs map[string][]chan Value // guarded by mu
	wg   sync.WaitGroup          // the counting subscribers' goroutines
}

func newMutexBus() Bus { return &mutexBus{subs: make(map[string][]chan Value)} }

func (m *mutexBus) Publisher(i int) func(Value) {
	name := topicNames[i]
	return func(v Value) {
		m.mu.RLock()
		for _, ch := range m.subs[name] {
			select {
			case ch <- v:
			default:
			}
		}
		m.mu.RUnlock()
	}
}

func (m *mutexBus) subscribe(i int) chan Value {
	ch := make(chan Value, Capacity)
	m.mu.Lock()
	m.subs[topicNames[i]] = append(m.subs[topicNames[i]], ch)
	m.mu.Unlock()
	return ch
}

func (m *mutexBus) Subscribe(i int, c *Counter) {
	ch := m.subscribe(i)
	m.wg.Go(func() {
		for v := range ch {
			c.Take(v)
		}
	})
}

func (m *mutexBus) SubscribeStuck(i int) Stuck { return &stuckChan[Value]{ch: m.subscribe(i)} }

// Close removes and closes every channel under the lock, so no publication
// can send on a closed channel.
func (m *mutexBus) Close() {
	m.mu.Lock()
	for name, chs := range m.subs {
		for _, ch := range chs {
			close(ch)
		}
		delete(m.subs, name)
	}
	m.mu.Unlock()
	m.wg.Wait()
}
