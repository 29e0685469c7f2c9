package reference_test

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// refBroker is a simple, obviously correct model of topic.Broker, written
// from the package documentation alone, in the manner of the standard
// library's sync/map_reference_test.go. It holds one mutex and an ordered list
// of subscriptions, sees types through reflect and values as any, and makes no
// attempt to be fast.
//
// It models a single goroutine: a subscription's channel is a bounded queue,
// and an unbuffered subscription never has a receiver waiting, so every value
// offered to it is dropped. Every value a subscription loses is counted by
// cause and handed to its OnLoss function, if it has one.
type refBroker struct {
	mu   sync.Mutex
	subs []*refSub // live subscriptions in subscription order, or after Shutdown those it closed; guarded by mu
	shut bool      // set by Shutdown once it has drained; guarded by mu
	// draining is set while Shutdown drains the handlers; guarded by mu.
	draining bool
	// published counts, by static type, the publications that some
	// subscription matched; guarded by mu.
	published map[reflect.Type]uint64
}

// refSub is one subscription of a refBroker.
type refSub struct {
	sources  []refSource   // From sources in the order given, then the own type; never changes
	capacity int           // never changes
	policy   topic.Policy  // never changes
	name     string        // never changes
	onLoss   func(refLoss) // nil for none; never changes
	queue    []any         // accepted and not yet received, oldest first; guarded by refBroker.mu
	lost     topic.Lost    // guarded by refBroker.mu
	// sent counts the values queued, rejected those its From functions
	// filtered; guarded by refBroker.mu.
	sent, rejected uint64
	closed         bool // set once by Cancel or Shutdown; guarded by refBroker.mu
	// handler is set for a handler, whose queue only Shutdown drains.
	handler *refHandler
	// offered lists, while Shutdown drains the handlers, the values that
	// reached the subscription's queue or were lost to a full one (the
	// order in which concurrent handlers offer them is not the model's).
	offered []any
}

// refHandler is the function of a handler: it is called with each value,
// and may publish one value of type pub, or fail by panicking.
type refHandler struct {
	fn                func(any) (out any, publish bool)
	pub               reflect.Type
	accepted, handled uint64
}

// refSource is one source type of a subscription.
type refSource struct {
	typ reflect.Type
	// convert is the From function, called with the published value and
	// returning the value to deliver and whether to deliver it; it may panic.
	// It is nil for the subscription's own type, whose values are delivered
	// unchanged.
	convert func(any) (any, bool)
}

// refLoss mirrors topic.Loss with the type erased: Value holds the Loss's
// Value converted to any, so a nil interface value is nil. Err, for handlers
// only, is always nil here.
type refLoss struct {
	Cause  topic.Cause
	Value  any
	Source any
	Panic  any
	Err    error
}

// refOption mirrors topic.Option: the zero refOption has no effect, and each
// other one sets one thing (the last one given wins) or adds a source.
type refOption struct {
	buffer *int
	from   *refSource
	policy *topic.Policy
	name   *string
	onLoss *func(refLoss) // points to nil for OnLoss(nil)
}

func refBuffer(n int) refOption { return refOption{buffer: &n} }

func refFrom(typ reflect.Type, convert func(any) (any, bool)) refOption {
	return refOption{from: &refSource{typ: typ, convert: convert}}
}

func refOverflow(p topic.Policy) refOption { return refOption{policy: &p} }
func refName(name string) refOption        { return refOption{name: &name} }

// refOnLoss sets the function that receives each loss; the model calls it
// outside its lock, after the publication, and it must not call the model.
func refOnLoss(f func(refLoss)) refOption { return refOption{onLoss: &f} }

// refDecision records, for one subscription and one publication, which of its
// sources matched first.
type refDecision struct {
	sub    *refSub
	source int // index into sub.sources
}

// Subscribe registers a subscription whose own type is own. The capacity is
// one unless a buffer option says otherwise; the last buffer option wins and a
// negative capacity is zero. The policy is DropNewest unless an overflow
// option says otherwise; the last one wins, and so do the last name and the
// last OnLoss function, which may be nil.
func (r *refBroker) Subscribe(own reflect.Type, opts ...refOption) *refSub {
	s := &refSub{capacity: 1}
	for _, o := range opts {
		if o.buffer != nil {
			s.capacity = max(*o.buffer, 0)
		}
		if o.from != nil {
			s.sources = append(s.sources, *o.from)
		}
		if o.policy != nil {
			s.policy = *o.policy
		}
		if o.name != nil {
			s.name = *o.name
		}
		if o.onLoss != nil {
			s.onLoss = *o.onLoss
		}
	}
	s.sources = append(s.sources, refSource{typ: own})

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shut {
		// After Shutdown: closed at once, unbuffered, never routed.
		s.closed, s.capacity = true, 0
		return s
	}
	r.subs = append(r.subs, s)
	return s
}

// Handle registers a handler of type own, with a queue of the capacity
// given, named name: a subscription whose queue Shutdown drains, calling fn
// with each value; fn's result, if it reports true, is published with static
// type pub. A panic of fn is counted Errored.
func (r *refBroker) Handle(own reflect.Type, capacity int, name string, pub reflect.Type, fn func(any) (any, bool)) *refSub {
	s := r.Subscribe(own, refBuffer(capacity), refName(name))
	r.mu.Lock()
	defer r.mu.Unlock()
	s.handler = &refHandler{fn: fn, pub: pub}
	return s
}

// Shutdown drains the handlers: it takes a value from a handler's queue and
// handles it, publishing what it returns, until every queue is empty; then
// it closes every subscription. Later publications count as Closed on the
// subscriptions they would have reached. The order in which it handles
// values is one the real broker may take: any order of the handlers, each
// queue in order.
func (r *refBroker) Shutdown() {
	r.mu.Lock()
	r.draining = true
	r.mu.Unlock()
	for {
		var s *refSub
		var v any
		r.mu.Lock()
		for _, x := range r.subs {
			if x.handler != nil && len(x.queue) > 0 {
				s, v, x.queue = x, x.queue[0], x.queue[1:]
				s.handler.accepted++
				break
			}
		}
		r.mu.Unlock()
		if s == nil {
			break
		}
		out, ok, failed, _ := refCall(s.handler.fn, v)
		r.mu.Lock()
		if failed {
			s.lost.Errored++
		} else {
			s.handler.handled++
		}
		r.mu.Unlock()
		if !failed && ok {
			r.Publish(s.handler.pub, out)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.draining, r.shut = false, true
	for _, s := range r.subs {
		s.closed = true
	}
}

// Publish offers v, published with static type static, to every live
// subscription. v is nil exactly when a nil interface value is published. It
// reports, for each subscription that matched, the source that decided.
//
// The first matching source decides. A From function that panics loses the
// value for that subscription, counted Failed; one that returns false filters
// it, which is no loss. A value that finds the buffer full is dropped, counted
// Full, unless the policy is DropOldest and the capacity is not zero: then the
// oldest queued value is evicted, counted Evicted, and the value is queued.
func (r *refBroker) Publish(static reflect.Type, v any) []refDecision {
	var (
		decisions []refDecision
		hooks     []func()
	)
	lose := func(s *refSub, l refLoss) {
		switch l.Cause {
		case topic.Full:
			s.lost.Full++
		case topic.Evicted:
			s.lost.Evicted++
		case topic.Failed:
			s.lost.Failed++
		case topic.Closed:
			s.lost.Closed++
		}
		if f := s.onLoss; f != nil {
			hooks = append(hooks, func() { f(l) })
		}
	}

	r.mu.Lock()
	matched := false
	for _, s := range r.subs {
		for i, src := range s.sources {
			if !refMatches(src.typ, static, v) {
				continue
			}
			matched = true
			if r.shut {
				// Closed by Shutdown: counted, its From function not called.
				l := refLoss{Cause: topic.Closed, Value: v}
				if own := s.sources[len(s.sources)-1].typ; i < len(s.sources)-1 {
					l = refLoss{Cause: topic.Closed, Value: reflect.Zero(own).Interface(), Source: v}
				}
				lose(s, l)
				break
			}
			decisions = append(decisions, refDecision{sub: s, source: i})
			out, ok := v, true
			if src.convert != nil {
				var (
					failed bool
					p      any
				)
				out, ok, failed, p = refCall(src.convert, v)
				if failed {
					zero := reflect.Zero(s.sources[len(s.sources)-1].typ).Interface()
					lose(s, refLoss{Cause: topic.Failed, Value: zero, Source: v, Panic: p})
					break
				}
			}
			if ok && r.draining {
				s.offered = append(s.offered, out)
			}
			switch {
			case !ok:
				s.rejected++ // filtered: not a loss
			case len(s.queue) < s.capacity:
				s.queue = append(s.queue, out)
				s.sent++
			case s.policy == topic.DropOldest && s.capacity > 0:
				old := s.queue[0]
				s.queue = append(s.queue[1:], out)
				s.sent++
				lose(s, refLoss{Cause: topic.Evicted, Value: old})
			default:
				lose(s, refLoss{Cause: topic.Full, Value: out})
			}
			break // the first matching source decides
		}
	}
	if matched {
		if r.published == nil {
			r.published = make(map[reflect.Type]uint64)
		}
		r.published[static]++
	}
	r.mu.Unlock()

	for _, h := range hooks {
		h()
	}
	return decisions
}

// refCall calls convert with v and reports whether it panicked, and with what.
// A panic with a nil value is a panic too.
func refCall(convert func(any) (any, bool), v any) (out any, ok, failed bool, p any) {
	defer func() {
		if failed {
			p = recover()
		}
	}()
	failed = true
	out, ok = convert(v)
	return out, ok, false, nil
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
	if r.shut {
		return // every subscription is closed already
	}
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

// Subscriptions describes every live subscription, ordered by type (as
// printed), then name, in subscription order when both are equal.
func (r *refBroker) Subscriptions() []topic.SubscriptionStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []topic.SubscriptionStats
	for _, s := range r.subs {
		st := topic.SubscriptionStats{
			Type:     s.sources[len(s.sources)-1].typ,
			Name:     s.name,
			Policy:   s.policy,
			Capacity: s.capacity,
			Queued:   len(s.queue),
			Lost:     s.lost,
			Sent:     s.sent,
			Rejected: s.rejected,
			Matched:  s.sent + s.rejected + s.lost.Full + s.lost.Failed + s.lost.Closed,
		}
		if h := s.handler; h != nil {
			st.Handler = &topic.HandlerStats{Accepted: h.accepted, Handled: h.handled}
		}
		out = append(out, st)
	}
	slices.SortStableFunc(out, refCompareStats)
	return out
}

// Published returns how many publications of each static type some
// subscription matched, the types none matched left out.
func (r *refBroker) Published() map[reflect.Type]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.published)
}

// refCompareStats orders snapshot entries as Broker.Subscriptions documents:
// by type as printed, then by name.
func refCompareStats(x, y topic.SubscriptionStats) int {
	return cmp.Or(cmp.Compare(x.Type.String(), y.Type.String()), cmp.Compare(x.Name, y.Name))
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

// TestReferenceCountsLossesAsDocumented checks the model's accounting of lost
// values against outcomes the documentation of Overflow, OnLoss, From, Name
// and Broker.Subscriptions states outright.
func TestReferenceCountsLossesAsDocumented(t *testing.T) {
	var (
		intT   = reflect.TypeFor[int]()
		countT = reflect.TypeFor[uCount]()
		errorT = reflect.TypeFor[error]()
	)
	hooks := map[string][]refLoss{}
	hook := func(name string) refOption {
		return refOnLoss(func(l refLoss) { hooks[name] = append(hooks[name], l) })
	}
	// boom panics on 2, filters 3, and converts the rest.
	boom := func(v any) (any, bool) {
		if v.(int) == 2 {
			panic("two")
		}
		return uCount(v.(int)), v.(int) != 3
	}
	errBoom := func(v any) (any, bool) { panic(uCode(v.(int))) }

	var r refBroker
	oldest := r.Subscribe(intT, refBuffer(2), refOverflow(topic.DropOldest), hook("oldest"), refName("x"), refName("oldest"))
	newest := r.Subscribe(intT, refOverflow(topic.DropOldest), refBuffer(2), refOverflow(topic.DropNewest), hook("newest"), refName("newest"))
	latest := r.Subscribe(intT, refOverflow(topic.DropOldest), refName("latest"))
	unbuffered := r.Subscribe(intT, refBuffer(0), refOverflow(topic.DropOldest), hook("lost"), refOnLoss(nil), refName("unbuffered"))
	failing := r.Subscribe(countT, refFrom(intT, boom), refBuffer(8), hook("ignored"), hook("failing"), refName("failing"))
	fullFailing := r.Subscribe(countT, refFrom(intT, boom), refBuffer(1), refOverflow(topic.DropOldest), hook("full failing"), refName("full failing"))
	errs := r.Subscribe(errorT, refFrom(intT, errBoom), hook("errs"), refName("errs"))
	gone := r.Subscribe(intT, refName("gone"))
	r.Cancel(gone)

	for i := 1; i <= 4; i++ {
		r.Publish(intT, i)
	}

	const (
		dropNew = topic.DropNewest
		dropOld = topic.DropOldest
	)
	want := []struct {
		name     string
		sub      *refSub
		typ      reflect.Type
		policy   topic.Policy
		capacity int
		values   []any
		lost     topic.Lost
		losses   []refLoss
		// sent and rejected; every subscription matched the 4 publications
		sent, rejected uint64
	}{
		{"oldest", oldest, intT, dropOld, 2, []any{3, 4}, topic.Lost{Evicted: 2}, []refLoss{
			{Cause: topic.Evicted, Value: 1},
			{Cause: topic.Evicted, Value: 2},
		}, 4, 0},
		{"newest", newest, intT, dropNew, 2, []any{1, 2}, topic.Lost{Full: 2}, []refLoss{
			{Cause: topic.Full, Value: 3},
			{Cause: topic.Full, Value: 4},
		}, 2, 0},
		{"latest", latest, intT, dropOld, 1, []any{4}, topic.Lost{Evicted: 3}, nil, 4, 0},
		{"unbuffered", unbuffered, intT, dropOld, 0, nil, topic.Lost{Full: 4}, nil, 0, 0},
		{"failing", failing, countT, dropNew, 8, []any{uCount(1), uCount(4)}, topic.Lost{Failed: 1}, []refLoss{
			{Cause: topic.Failed, Value: uCount(0), Source: 2, Panic: "two"},
		}, 2, 1},
		{"full failing", fullFailing, countT, dropOld, 1, []any{uCount(4)}, topic.Lost{Evicted: 1, Failed: 1}, []refLoss{
			{Cause: topic.Failed, Value: uCount(0), Source: 2, Panic: "two"},
			{Cause: topic.Evicted, Value: uCount(1)},
		}, 2, 1},
		{"errs", errs, errorT, dropNew, 1, nil, topic.Lost{Failed: 4}, []refLoss{
			{Cause: topic.Failed, Value: nil, Source: 1, Panic: uCode(1)},
			{Cause: topic.Failed, Value: nil, Source: 2, Panic: uCode(2)},
			{Cause: topic.Failed, Value: nil, Source: 3, Panic: uCode(3)},
			{Cause: topic.Failed, Value: nil, Source: 4, Panic: uCode(4)},
		}, 0, 0},
	}
	if len(hooks["lost"]) != 0 || len(hooks["ignored"]) != 0 {
		t.Errorf("replaced OnLoss functions were called: %v", hooks)
	}
	stats := r.Subscriptions()
	if len(stats) != len(want) {
		t.Errorf("Subscriptions: got %d, want %d: %v", len(stats), len(want), stats)
	}
	if !slices.IsSortedFunc(stats, refCompareStats) {
		t.Errorf("Subscriptions are not sorted: %v", stats)
	}
	for _, w := range want {
		i := slices.IndexFunc(stats, func(st topic.SubscriptionStats) bool { return st.Name == w.name })
		if i < 0 {
			t.Errorf("%s: not in Subscriptions", w.name)
			continue
		}
		wantStats := topic.SubscriptionStats{Type: w.typ, Name: w.name,
			Policy: w.policy, Capacity: w.capacity, Queued: len(w.values), Lost: w.lost,
			Sent: w.sent, Rejected: w.rejected, Matched: 4}
		if st := stats[i]; st != wantStats {
			t.Errorf("%s: got %+v, want %+v", w.name, st, wantStats)
		}
		if got := hooks[w.name]; !slices.Equal(got, w.losses) {
			t.Errorf("%s: OnLoss got %v, want %v", w.name, got, w.losses)
		}
		if got, _ := r.Drain(w.sub); !slices.Equal(got, w.values) {
			t.Errorf("%s: received %v, want %v", w.name, got, w.values)
		}
	}
}
