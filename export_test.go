package topic

import (
	"fmt"
	"runtime"
	"strings"
)

// Guard exposes the publish guard to the benchmarks, so that its cost can be
// shown beside a raw channel send.
type Guard = guard

// NewGuard returns a guard as a broker makes one.
func NewGuard() *Guard { return newGuard() }

// EnterExit enters and leaves g, as one publication does.
func (g *guard) EnterExit() { g.exit(g.enter()) }

// Goroutines returns the number of goroutines the broker runs: its handlers'
// workers and Shutdown's drain. A worker is counted until just before its
// stop function or Shutdown may return.
func (b *Broker) Goroutines() int64 { return b.running.Load() }

// WatchScan makes a Watch that never ticks and returns its scan, one
// interval's work, for BenchmarkWatch; stop ends it.
func (b *Broker) WatchScan(f func(Incident)) (scan func(), stop func()) {
	stop = b.Watch(1<<62, f)
	b.mu.Lock()
	w := b.watches[len(b.watches)-1]
	b.mu.Unlock()
	return func() { w.scan(false, false) }, stop
}

// Outlets returns how many outlets the route of T lists, tombstones
// included, and how many of them are live (see outlet).
func Outlets[T any](b *Broker) (listed, live int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entryLocked(keyOf[T]())
	if e == nil {
		return 0, 0
	}
	r := editorOf[T]{}.load(e)
	if r == nil {
		return 0, 0
	}
	for i := range r.direct {
		if r.direct[i].channel() != nil {
			live++
		}
	}
	return len(r.direct), live
}

// AckMarks returns how many runs of reads not committed AckWait keeps for
// f (see readMark), 0 without AckWait.
func AckMarks[T any](f *Follower[T]) int {
	a := f.f.ack
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.reads)
}

// EnterGuard enters b's guard on the calling goroutine, which must have
// subscribed, and returns its exit: publications meanwhile on the same
// goroutine find their stripe's slot held and count into the guard's sets.
func (b *Broker) EnterGuard() (exit func()) {
	g := b.table.Load().guard
	c := g.enter()
	return func() { g.exit(c) }
}

// Wakes returns how many times the live follower of T named name, of any
// kind, has been woken from a wait (see waiter.woken).
func Wakes[T any](b *Broker, name string) uint64 {
	l := b.logOf[T]()
	l.names.mu.Lock()
	defer l.names.mu.Unlock()
	d := l.names.m[name]
	if d == nil || d.live == nil {
		panic("Wakes: no live follower named " + name)
	}
	return d.live.(*follower[T]).wake.woken.Load()
}

// HandlerWaits returns, for each handler of b whose worker has started, the
// wait its goroutine is in, as a stack dump names it ("chan receive",
// "select", ...), or "" for one not waiting.
func (b *Broker) HandlerWaits() []string {
	b.mu.Lock()
	ids := make(map[uint64]bool, len(b.handlers))
	for h := range b.handlers {
		ids[h.workerID()] = true
	}
	b.mu.Unlock()
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var waits []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		var id uint64
		var state string
		head, _, _ := strings.Cut(g, "\n")
		if _, err := fmt.Sscanf(head, "goroutine %d [", &id); err != nil || !ids[id] {
			continue
		}
		state = head[strings.Index(head, "[")+1 : strings.LastIndex(head, "]")]
		state, _, _ = strings.Cut(state, ",") // "chan receive, 2 minutes"
		state = strings.TrimSuffix(state, " (durable)")
		if state == "running" || state == "runnable" {
			state = ""
		}
		waits = append(waits, state)
	}
	return waits
}
