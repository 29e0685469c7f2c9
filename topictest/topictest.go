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
	"context"
	"fmt"
	"reflect"
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
	// as printed (such as "main.Order") if it has none. Every subscription
	// it names is expected to have lost exactly Lost.
	Sub  string
	Lost topic.Lost
}

// NoLoss checks, at tb's cleanup, that no subscription of b lost a value,
// but those listed in expected, which must have lost exactly what is listed.
// It first waits for the handlers to settle (up to SettleTimeout), so that
// what they would lose is counted. Register it before the subscriptions a
// test stops, or make it the broker's last word: a stopped subscription is
// no longer seen, unless b was shut down (Subscriptions then keeps the
// final counts).
func NoLoss(tb testing.TB, b *topic.Broker, expected ...Loss) {
	tb.Helper()
	if b == nil {
		tb.Fatalf("topictest: NoLoss of a nil broker")
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), SettleTimeout)
		defer cancel()
		if err := b.Settle(ctx); err != nil {
			tb.Errorf("topictest: the broker's handlers did not settle within %v, so losses may be uncounted: %s", SettleTimeout, busy(b))
		}
		want := make(map[string]topic.Lost, len(expected))
		for _, e := range expected {
			want[e.Sub] = e.Lost
		}
		seen := make(map[string]bool)
		for _, st := range b.Subscriptions() {
			key := st.Name
			if key == "" {
				key = st.Type.String()
			}
			w, ok := want[key]
			seen[key] = seen[key] || ok
			if st.Lost != w {
				if ok {
					tb.Errorf("topictest: %s lost %s; want %s", describe(st), causes(st.Lost), causes(w))
				} else {
					tb.Errorf("topictest: %s lost %s: %s", describe(st), values(st.Lost.Total()), causes(st.Lost))
				}
			}
		}
		for _, e := range expected {
			if !seen[e.Sub] {
				tb.Errorf("topictest: no subscription %q, expected to lose %s", e.Sub, causes(e.Lost))
			}
		}
	})
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
