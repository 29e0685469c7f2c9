// Package topictest helps test programs that use a topic.Broker, as
// net/http/httptest does for net/http: record what is published, wait until
// the broker's handlers have settled, and check at the end of a test that
// nothing was lost.
//
// Every function takes the test's testing.TB and fails it with a message
// that names the type, the subscription and the cause. They work inside
// testing/synctest bubbles, where their timeouts are the bubble's time; a
// Recorder made in a bubble must be used in it.
package topictest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic"
)

// RecordBuffer is the queue of a Recorder's subscription: more values
// published faster than the recorder can append them are lost, counted as
// Full on the subscription named RecordName, which NoLoss reports.
const RecordBuffer = 1 << 16

// RecordName is the name of a Recorder's subscription.
const RecordName = "topictest.Record"

// A Recorder records the values of type T published on a broker from the
// moment it is made, in the order the broker delivers them. It is a handler
// of the broker's, so Settle waits for it.
type Recorder[T any] struct {
	tb   testing.TB
	mu   sync.Mutex
	vals []T           // guarded by mu
	more chan struct{} // closed and replaced whenever a value is recorded; guarded by mu
}

// Record starts recording the values of T published on b (a type T, or an
// interface type for every value that implements it), until tb's cleanup.
func Record[T any](tb testing.TB, b *topic.Broker) *Recorder[T] {
	tb.Helper()
	if b == nil {
		tb.Fatalf("topictest: Record[%v] of a nil broker", typeOf[T]())
	}
	r := &Recorder[T]{tb: tb, more: make(chan struct{})}
	stop := b.Handle(func(_ context.Context, v T) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.vals = append(r.vals, v)
		close(r.more)
		r.more = make(chan struct{})
		return nil
	}, topic.Name[T](RecordName), topic.Buffer[T](RecordBuffer))
	tb.Cleanup(stop)
	return r
}

// Values returns a copy of the values recorded so far.
func (r *Recorder[T]) Values() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.vals...)
}

// Len returns the number of values recorded so far.
func (r *Recorder[T]) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.vals)
}

// Wait waits until at least n values have been recorded and returns the
// first n. If timeout passes first, it fails the test at once (FailNow),
// printing what was recorded; so, like FailNow, it must be called from the
// test's goroutine. A negative n is a test's mistake, and fails it too.
func (r *Recorder[T]) Wait(n int, timeout time.Duration) []T {
	r.tb.Helper()
	if n < 0 {
		r.tb.Fatalf("topictest: Wait for %d values of %v: n must not be negative", n, typeOf[T]())
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		got, more := len(r.vals), r.more
		if got >= n {
			vals := append([]T(nil), r.vals[:n]...)
			r.mu.Unlock()
			return vals
		}
		r.mu.Unlock()
		select {
		case <-more:
		case <-deadline.C:
			r.tb.Fatalf("topictest: waited %v for %d values of %v, %d recorded: %v", timeout, n, typeOf[T](), got, r.Values())
		}
	}
}

// Settle waits until b's handlers are idle (see topic.Broker.Settle): every
// handler's queue empty, no call of its function in flight, handlers that
// follow a retained type at the end of its log. If timeout passes first, it
// fails the test at once (FailNow) naming the handlers still busy.
func Settle(tb testing.TB, b *topic.Broker, timeout time.Duration) {
	tb.Helper()
	if b == nil {
		tb.Fatalf("topictest: Settle of a nil broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := b.Settle(ctx); err != nil {
		tb.Fatalf("topictest: the broker's handlers did not settle within %v: %s", timeout, busy(b))
	}
}

// busy describes the handlers of b that hold or have queued a value.
func busy(b *topic.Broker) string {
	var out []string
	for _, st := range b.Subscriptions() {
		if st.Handler != nil && (st.Queued > 0 || st.Handler.Accepted > st.Handler.Handled+st.Handler.DeadLettered+st.Lost.Errored+st.Lost.Discarded) {
			out = append(out, fmt.Sprintf("%s with %d queued", describe(st), st.Queued))
		}
	}
	if len(out) == 0 {
		return "a handler holds a value"
	}
	return strings.Join(out, "; ")
}

// A Loss is what one subscription is expected to lose (see NoLoss).
type Loss struct {
	// Sub names the subscription: its name (the Name option), or its type
	// as printed (such as "main.Order") if it has none. What the
	// subscriptions it names lost, added up, is expected to be exactly Lost.
	Sub  string
	Lost topic.Lost
	// DeadLettered is what the handlers it names are expected to have
	// dead-lettered: a value a handler gave up on is a loss to NoLoss,
	// whether or not something receives its dead letter.
	DeadLettered uint64
}

// NoLoss checks, at tb's cleanup, that no subscription of b lost a value
// from the call of NoLoss on, and that no handler dead-lettered one, but
// those listed in expected, which must have lost (and dead-lettered)
// exactly what is listed. It sees every subscription: those live at the
// cleanup, and those that ended before it (cancelled, stopped, closed by
// Shutdown, or ended by a cleanup that ran first, such as a Recorder's), so
// it may be registered anywhere in the test. It first waits for the
// handlers to settle (up to SettleTimeout), so that what they would lose is
// counted. It watches b with Broker.Watch until the cleanup, and reads the
// subscriptions' counts at the call and at the cleanup too, for what the
// watch cannot report (a publication counted Closed after Shutdown's
// drain ended the watch).
func NoLoss(tb testing.TB, b *topic.Broker, expected ...Loss) {
	tb.Helper()
	if b == nil {
		tb.Fatalf("topictest: NoLoss of a nil broker")
	}
	var (
		mu     sync.Mutex
		tallys = map[string]*tally{}
	)
	// What the subscriptions live now lost before: not NoLoss's business.
	base := map[string]topic.Lost{}
	for _, st := range b.Subscriptions() {
		k, _ := keyOf(st.Type, st.Name)
		base[k] = add(base[k], st.Lost)
	}
	stop := b.Watch(time.Hour, func(i topic.Incident) {
		mu.Lock()
		defer mu.Unlock()
		t := tallyOf(tallys, i.Type, i.Name)
		t.lost = add(t.lost, i.Lost)
		t.dead += i.DeadLettered
	})
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), SettleTimeout)
		defer cancel()
		if err := b.Settle(ctx); err != nil {
			tb.Errorf("topictest: the broker's handlers did not settle within %v, so losses may be uncounted: %s", SettleTimeout, busy(b))
		}
		stop() // reports what it has not yet
		mu.Lock()
		defer mu.Unlock()
		// The watch misses what was counted after it ended by itself, after
		// Shutdown's drain (a publication then, counted Closed); the
		// snapshot misses the subscriptions that ended. Each is a lower
		// bound of what was lost since the call: the larger, cause by cause.
		now := map[string]topic.Lost{}
		for _, st := range b.Subscriptions() {
			t := tallyOf(tallys, st.Type, st.Name)
			t.kind = describe(st)
			k, _ := keyOf(st.Type, st.Name)
			now[k] = add(now[k], st.Lost)
		}
		for k, l := range now {
			tallys[k].lost = larger(tallys[k].lost, since(l, base[k]))
		}
		want := make(map[string]Loss, len(expected))
		for _, e := range expected {
			want[e.Sub] = e
		}
		// Ordered as Subscriptions orders them: by type, then name.
		keys := slices.SortedFunc(maps.Keys(tallys), func(a, b string) int {
			return cmp.Or(cmp.Compare(tallys[a].typ, tallys[b].typ), cmp.Compare(tallys[a].name, tallys[b].name))
		})
		for _, k := range keys {
			t, w := tallys[k], want[k]
			_, listed := want[k]
			if t.lost != w.Lost {
				if listed {
					tb.Errorf("topictest: %s lost %s; want %s", t.kind, causes(t.lost), causes(w.Lost))
				} else {
					tb.Errorf("topictest: %s lost %s: %s", t.kind, values(t.lost.Total()), causes(t.lost))
				}
			}
			if t.dead != w.DeadLettered {
				tb.Errorf("topictest: %s dead-lettered %s; want %d", t.kind, values(t.dead), w.DeadLettered)
			}
		}
		for _, e := range expected {
			if tallys[e.Sub] == nil {
				tb.Errorf("topictest: no subscription %q, expected to lose %s", e.Sub, causes(e.Lost))
			}
		}
	})
}

// A tally is what the subscriptions of one name (or of one type, unnamed)
// lost and dead-lettered.
type tally struct {
	typ  string // the type, as printed
	name string
	kind string // describes them
	lost topic.Lost
	dead uint64
}

// tallyOf returns the tally of the subscriptions named name, or of type typ
// if name is empty, making it if need be.
func tallyOf(m map[string]*tally, typ reflect.Type, name string) *tally {
	k, kind := keyOf(typ, name)
	t := m[k]
	if t == nil {
		t = &tally{typ: typ.String(), name: name, kind: kind}
		m[k] = t
	}
	return t
}

// keyOf returns the key of a Loss for the subscriptions of type typ and
// name (the name, or the type if it has none), and how to name them.
func keyOf(typ reflect.Type, name string) (key, kind string) {
	if name == "" {
		return typ.String(), fmt.Sprintf("subscription of %v", typ)
	}
	return name, fmt.Sprintf("subscription %q (%v)", name, typ)
}

// larger returns the larger of a and b, cause by cause.
func larger(a, b topic.Lost) topic.Lost {
	return byCause(a, b, func(x, y uint64) uint64 { return max(x, y) })
}

// since returns a less b, cause by cause, none below zero.
func since(a, b topic.Lost) topic.Lost {
	return byCause(a, b, func(x, y uint64) uint64 { return x - min(x, y) })
}

// add returns the sum of a and b, cause by cause.
func add(a, b topic.Lost) topic.Lost {
	return byCause(a, b, func(x, y uint64) uint64 { return x + y })
}

// byCause returns the counts f makes of those of a and b, cause by cause.
func byCause(a, b topic.Lost, f func(x, y uint64) uint64) topic.Lost {
	return topic.Lost{
		Full: f(a.Full, b.Full), Evicted: f(a.Evicted, b.Evicted), Failed: f(a.Failed, b.Failed),
		Errored: f(a.Errored, b.Errored), Discarded: f(a.Discarded, b.Discarded),
		Closed: f(a.Closed, b.Closed), Skipped: f(a.Skipped, b.Skipped),
	}
}

// SettleTimeout is how long NoLoss waits for the handlers to settle.
const SettleTimeout = 10 * time.Second

// describe names the subscription of st: `subscription "orders" (main.Order)`.
func describe(st topic.SubscriptionStats) string {
	kind := "subscription"
	switch {
	case st.Handler != nil:
		kind = "handler"
	case st.Follower != nil:
		kind = "follower"
	}
	if st.Name == "" {
		return fmt.Sprintf("%s of %v", kind, st.Type)
	}
	return fmt.Sprintf("%s %q (%v)", kind, st.Name, st.Type)
}

// causes lists the counts of l by cause: "full 2, errored 1", or "nothing".
func causes(l topic.Lost) string {
	var out []string
	for c := topic.Full; c <= topic.Skipped; c++ {
		if n := l.Of(c); n > 0 {
			out = append(out, fmt.Sprintf("%v %d", c, n))
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

// values says "1 value", "2 values".
func values(n uint64) string {
	if n == 1 {
		return "1 value"
	}
	return fmt.Sprintf("%d values", n)
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }
