package topic

import (
	"reflect"
	"time"
)

// A Call is one call of a handler's function, as TimeCalls reports it.
type Call struct {
	Type     reflect.Type  // the handler's type, T of Handle
	Name     string        // its Name option, or empty
	Attempt  int           // 1 for a value's first call, 2 for its first retry, and so on
	Duration time.Duration // how long the function ran
	// Err is what the function returned, nil for a success; a *PanicError
	// if it panicked.
	Err error
}

// TimeCalls calls f after every call of a handler's function on the
// broker, of the handlers made before and after it, with how long the
// call took and what it returned: what a histogram of processing times
// records (the topicotel module reports messaging.process.duration from
// it). f runs on the handler's goroutine, between one call and the next:
// it must be quick and must not block; a panic in it is recovered and
// ignored. A function that calls runtime.Goexit is not reported.
//
// Cost: without a TimeCalls, one atomic load per call. With one, two
// readings of the monotonic clock per call and the call of f.
//
// stop ends the reports; f is not called once stop has returned, but for
// a call that had already begun. stop may be called more than once. A nil
// f panics.
func (b *Broker) TimeCalls(f func(Call)) (stop func()) {
	if f == nil {
		panic("topic: TimeCalls function is nil")
	}
	t := &callTimer{f: f}
	b.mu.Lock()
	b.setTimersLocked(append(b.timerList(), t))
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		list := b.timerList()
		for i, x := range list {
			if x == t {
				b.setTimersLocked(append(list[:i:i], list[i+1:]...))
				return
			}
		}
	}
}

// A callTimer is the function of one TimeCalls. Compared by address.
type callTimer struct{ f func(Call) }

// timerList returns the TimeCalls functions in force.
func (b *Broker) timerList() []*callTimer {
	if p := b.timers.Load(); p != nil {
		return *p
	}
	return nil
}

// setTimersLocked publishes list, a new slice, as the TimeCalls functions
// in force, nil if empty. The caller holds b.mu.
func (b *Broker) setTimersLocked(list []*callTimer) {
	if len(list) == 0 {
		b.timers.Store(nil)
		return
	}
	b.timers.Store(&list)
}

// timed reports the call of attempt of h's function that began at began
// and returned err to timers.
func (h *handler[T]) timed(timers []*callTimer, attempt int, began time.Time, err error) {
	c := Call{Type: reflect.TypeFor[T](), Name: h.s.name(), Attempt: attempt, Duration: time.Since(began), Err: err}
	for _, t := range timers {
		callHook(t.f, c)
	}
}
