package topic_test

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
)

// refBroker is a simple, obviously correct model of topic.Broker, written
// from the package documentation alone, in the manner of the standard
// library's sync/map_reference_test.go. It holds one mutex and an ordered list
// of subscriptions, sees types through reflect and values as any, and makes no
// attempt to be fast.
//
// It models a single goroutine: a subscription's channel is a bounded queue,
// and an unbuffered subscription never has a receiver waiting, so every value
// offered to it is dropped.
type refBroker struct {
	mu   sync.Mutex
	subs []*refSub // live subscriptions in subscription order; guarded by mu
}

// refSub is one subscription of a refBroker.
type refSub struct {
	sources  []refSource // From sources in the order given, then the own type; never changes
	capacity int         // never changes
	queue    []any       // accepted and not yet received, oldest first; guarded by refBroker.mu
	closed   bool        // set once by Cancel; guarded by refBroker.mu
}

// refSource is one source type of a subscription.
type refSource struct {
	typ reflect.Type
	// convert is the From function, called with the published value and
	// returning the value to deliver and whether to deliver it. It is nil for
	// the subscription's own type, whose values are delivered unchanged.
	convert func(any) (any, bool)
}

// refOption mirrors topic.Option: the zero refOption has no effect, a buffer
// option sets the capacity, and a from option adds a source.
type refOption struct {
	buffer *int
	from   *refSource
}

func refBuffer(n int) refOption { return refOption{buffer: &n} }

func refFrom(typ reflect.Type, convert func(any) (any, bool)) refOption {
	return refOption{from: &refSource{typ: typ, convert: convert}}
}

// refDecision records, for one subscription and one publication, which of its
// sources matched first and whether the subscription had room for a value.
type refDecision struct {
	sub     *refSub
	source  int  // index into sub.sources
	hadRoom bool // capacity > len(queue) before the publication
}

// Subscribe registers a subscription whose own type is own. The capacity is
// one unless a buffer option says otherwise; the last buffer option wins and a
// negative capacity is zero.
func (r *refBroker) Subscribe(own reflect.Type, opts ...refOption) *refSub {
	s := &refSub{capacity: 1}
	for _, o := range opts {
		if o.buffer != nil {
			s.capacity = max(*o.buffer, 0)
		}
		if o.from != nil {
			s.sources = append(s.sources, *o.from)
		}
	}
	s.sources = append(s.sources, refSource{typ: own})

	r.mu.Lock()
	defer r.mu.Unlock()
	r.subs = append(r.subs, s)
	return s
}

// Publish offers v, published with static type static, to every live
// subscription. v is nil exactly when a nil interface value is published. It
// reports, for each subscription that matched, the source that decided.
func (r *refBroker) Publish(static reflect.Type, v any) []refDecision {
	r.mu.Lock()
	defer r.mu.Unlock()
	var decisions []refDecision
	for _, s := range r.subs {
		for i, src := range s.sources {
			if !refMatches(src.typ, static, v) {
				continue
			}
			decisions = append(decisions, refDecision{sub: s, source: i, hadRoom: len(s.queue) < s.capacity})
			out, ok := v, true
			if src.convert != nil {
				out, ok = src.convert(v)
			}
			if ok && len(s.queue) < s.capacity {
				s.queue = append(s.queue, out)
			}
			break // the first matching source decides
		}
	}
	return decisions
}

// refMatches reports whether source type s matches a publication of value v
// with static type static: s is identical to it, or s is any, or s is an
// interface type that v's dynamic type implements. A nil interface value has
// no dynamic type.
func refMatches(s, static reflect.Type, v any) bool {
	switch {
	case s == static:
		return true
	case s.Kind() != reflect.Interface:
		return false // a concrete source matches only its identical type
	case s.NumMethod() == 0:
		return true // any matches everything, nil interface values included
	case v == nil:
		return false
	default:
		return reflect.TypeOf(v).Implements(s)
	}
}

// Cancel unregisters s and closes it. It is idempotent; values already
// accepted remain receivable.
func (r *refBroker) Cancel(s *refSub) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subs = slices.DeleteFunc(r.subs, func(x *refSub) bool { return x == s })
	s.closed = true
}

// Drain receives every value s currently holds, oldest first, and reports
// whether s is closed.
func (r *refBroker) Drain(s *refSub) (values []any, closed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	values, s.queue = s.queue, nil
	return values, s.closed
}

// TestReferenceFollowsTheDocumentation checks the model itself against
// outcomes the documentation states outright, so that the model and the
// implementation cannot agree on a misreading unnoticed.
func TestReferenceFollowsTheDocumentation(t *testing.T) {
	var (
		anyT      = reflect.TypeFor[any]()
		errorT    = reflect.TypeFor[error]()
		stringerT = reflect.TypeFor[fmt.Stringer]()
		intT      = reflect.TypeFor[int]()
		countT    = reflect.TypeFor[uCount]()
		codeT     = reflect.TypeFor[uCode]()
	)
	double := func(v any) (any, bool) { return uCount(2 * v.(int)), true }
	even := func(v any) (any, bool) { return v, v.(uCount)%2 == 0 }

	var r refBroker
	all := r.Subscribe(anyT, refBuffer(8))
	errs := r.Subscribe(errorT, refBuffer(8))
	strs := r.Subscribe(stringerT, refBuffer(8), refOption{})
	codes := r.Subscribe(codeT, refBuffer(8))
	ints := r.Subscribe(intT, refBuffer(0))
	counts := r.Subscribe(countT, refFrom(intT, double), refFrom(countT, even), refFrom(intT, nil), refBuffer(-3), refBuffer(8))
	dflt := r.Subscribe(countT)
	gone := r.Subscribe(intT, refBuffer(8))
	r.Cancel(gone)
	r.Cancel(gone)

	r.Publish(intT, 3)                      // all; counts via double; ints drops (unbuffered); gone is cancelled
	r.Publish(errorT, nil)                  // nil error: all and errs only
	r.Publish(anyT, nil)                    // nil any: all only
	r.Publish(errorT, uCode(404))           // through error: all, errs, strs (dynamic type), not codes
	r.Publish(codeT, uCode(500))            // all, errs, strs, codes
	r.Publish(countT, uCount(1))            // counts: rejected by even, own type never consulted; dflt keeps it
	r.Publish(countT, uCount(2))            // counts: kept; dflt is full
	r.Publish(stringerT, fmt.Stringer(nil)) // nil Stringer: all and strs

	want := []struct {
		name   string
		sub    *refSub
		values []any
		closed bool
	}{
		{"any", all, []any{3, nil, nil, uCode(404), uCode(500), uCount(1), uCount(2), nil}, false},
		{"error", errs, []any{nil, uCode(404), uCode(500)}, false},
		{"Stringer", strs, []any{uCode(404), uCode(500), uCount(1), uCount(2), nil}, false},
		{"uCode", codes, []any{uCode(500)}, false},
		{"unbuffered int", ints, nil, false},
		{"From", counts, []any{uCount(6), uCount(2)}, false},
		{"default capacity", dflt, []any{uCount(1)}, false},
		{"cancelled", gone, nil, true},
	}
	for _, w := range want {
		got, closed := r.Drain(w.sub)
		if !slices.Equal(got, w.values) || closed != w.closed {
			t.Errorf("%s: got %v closed=%v, want %v closed=%v", w.name, got, closed, w.values, w.closed)
		}
	}
	if got := len(r.subs); got != 7 {
		t.Errorf("live subscriptions: got %d, want 7", got)
	}
}
