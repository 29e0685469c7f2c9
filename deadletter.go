package topic

// Dead letters: what an at-least-once handler publishes for a value it gave
// up on, Permanent that gives up at once, and the rule that a dead letter is
// never dead-lettered again.

import (
	"errors"
	"reflect"
)

// A DeadLetter is published, on the broker of the handler, for each value an
// at-least-once handler failed to handle in all its attempts, or at once
// when the call's error is Permanent. Subscribe to DeadLetter[T] for the dead
// letters of values of type T, or to DeadLettered for all of them.
//
// A dead letter is published like any value, so what receives it bounds
// what is kept. A plain channel subscription drops the dead letters that do
// not fit its buffer (counted Full): a burst of failures overflows it. To
// keep every one, retain DeadLetter[T] and follow it: the follower waits
// for its reader, and only the retention bounds what it keeps (a dead
// letter trimmed before it was read is counted Skipped):
//
//	b.Retain[topic.DeadLetter[Order]](topic.Retention{Count: 10_000})
//	dead, cancel := b.Subscribe(topic.Follow[topic.DeadLetter[Order]]())
//
// A handler does not dead-letter a value that is itself a dead letter, nor
// one that reached it through a From source from a dead letter (the usual
// re-drive: a handler of T that also takes DeadLetter[T] back): that value is
// lost, counted as Errored, so that failing handlers cannot feed their dead
// letters back to themselves, or to each other, forever.
type DeadLetter[T any] struct {
	Value    T
	Err      error  // the error of the last attempt
	Attempts int    // the calls made
	Handler  string // the handler's Name, or empty
}

// Letter returns d with its value as an interface.
func (d DeadLetter[T]) Letter() Letter {
	return Letter{Value: d.Value, Err: d.Err, Attempts: d.Attempts, Handler: d.Handler}
}

// DeadLettered is implemented by every DeadLetter type. A subscription to it
// receives every dead letter published on the broker.
type DeadLettered interface {
	Letter() Letter
}

// A Letter is a dead letter of any type.
type Letter struct {
	Value    any
	Err      error
	Attempts int
	Handler  string
}

// Permanent wraps err to tell an at-least-once handler that retrying its
// value is pointless (a declined card, a malformed order): the value is
// dead-lettered at once, without the attempts left, and the DeadLetter's Err
// is the error returned, from which errors.Is and errors.As reach err. An
// at-most-once handler counts it as Errored like any error. Permanent(nil)
// is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// A PermanentError is an error that Permanent wrapped.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }

// Unwrap returns the error wrapped.
func (e *PermanentError) Unwrap() error { return e.Err }

// isPermanent reports whether err, or an error it wraps, is a PermanentError.
func isPermanent(err error) bool {
	_, ok := errors.AsType[*PermanentError](err)
	return ok
}

// isDeadLetter reports whether v is itself a dead letter, or a Record of
// one.
func isDeadLetter[T any](v T) bool {
	switch x := any(v).(type) {
	case DeadLettered:
		return true
	case interface{ recordValue() any }:
		if rv := reflect.ValueOf(x); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return false // a nil *Record: its value method would panic
		}
		return isDeadLetter(x.recordValue())
	}
	return false
}
