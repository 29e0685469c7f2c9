package topic

import (
	"cmp"
	"encoding/json"
	"path"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// SubscriptionStats describes one live subscription at one moment.
type SubscriptionStats struct {
	Type     reflect.Type // the subscription's type, T of Subscribe[T]
	Name     string       // as given by the Name option, or empty
	Policy   Policy       // as given by the Overflow option
	Capacity int          // the capacity of its channel
	Queued   int          // the values in its channel, not yet received
	Lost     Lost         // the values it lost, by cause, since it began
	// Handler holds the counts of a handler subscription, nil for a
	// channel subscription. A handler's counts are published by its
	// goroutine at least every 64 values, whenever its queue is empty, and
	// before each back-off of a retry.
	Handler *HandlerStats
	// Follower holds the position of a follower (see Follow), nil for a
	// subscription that is sent to. A follower's Queued is its Lag, but for
	// a channel follower, whose Queued is what its channel holds.
	Follower *FollowerStats
	// Made is where the call that made the subscription (Subscribe,
	// Handle or Broker.Follow) is in the program: the import path of its
	// package, the file's name and the line, as in
	// "example.com/shop/billing/orders.go:42". It is taken once, when the
	// subscription is made, never on the publish path: a look up the stack
	// that makes a Subscribe and cancel about half a microsecond slower
	// (BenchmarkSubscribeCancelSameType).
	Made string
}

// MarshalJSON encodes st with readable names: the type as printed, the
// policy and loss causes by name.
//
//	{"type":"main.Order","name":"orders","policy":"drop-newest","capacity":64,
//	 "queued":3,"lost":{"full":0,...},"handler":{"accepted":12,...}}
func (st SubscriptionStats) MarshalJSON() ([]byte, error) {
	typ := "" // a SubscriptionStats not made by the broker
	if st.Type != nil {
		typ = st.Type.String()
	}
	return json.Marshal(struct {
		Type     string         `json:"type"`
		Name     string         `json:"name"`
		Policy   Policy         `json:"policy"`
		Capacity int            `json:"capacity"`
		Queued   int            `json:"queued"`
		Lost     Lost           `json:"lost"`
		Handler  *HandlerStats  `json:"handler,omitempty"`
		Follower *FollowerStats `json:"follower,omitempty"`
		Made     string         `json:"made,omitempty"`
	}{typ, st.Name, st.Policy, st.Capacity, st.Queued, st.Lost, st.Handler, st.Follower, st.Made})
}

// callerPC returns the program counter of the call of the function that
// calls it: in Subscribe, where Subscribe was called. Subscribe, Handle and
// Follow take it, once per subscription.
func callerPC() uintptr {
	var pc [1]uintptr
	// Skipped: runtime.Callers, callerPC, the API function (counted as
	// written, inlined or not: Callers skips logical frames).
	if runtime.Callers(3, pc[:]) == 0 {
		return 0
	}
	return pc[0]
}

// madeAt returns pc's place as the import path of its function's package,
// its file's name and its line, "" for none: the same wherever the program
// was built. The places are few (the program's calls of Subscribe, Handle
// and Follow), and each is resolved once, whatever the subscriptions made
// there.
func madeAt(pc uintptr) string {
	if pc == 0 {
		return ""
	}
	if at, ok := places.Load(pc); ok {
		return at.(string)
	}
	f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	file := f.File
	if pkg := packageOf(f.Function); pkg != "" {
		file = pkg + "/" + path.Base(file)
	}
	at := file + ":" + strconv.Itoa(f.Line)
	places.Store(pc, at)
	return at
}

// packageOf returns the import path of the package of fn, a function's
// name as the runtime gives it ("example.com/shop/billing.(*Biller).start.func1"),
// or "" if there is none.
func packageOf(fn string) string {
	slash := strings.LastIndexByte(fn, '/') + 1
	dot := strings.IndexByte(fn[slash:], '.')
	if dot < 0 {
		return ""
	}
	return fn[:slash+dot]
}

// places caches madeAt's answers, by program counter: a function of the
// program's code, the same for every broker.
var places sync.Map

// Subscriptions returns a snapshot of every live subscription, ordered by
// type (as printed), then name. After Shutdown it returns the final counts
// of every subscription and handler Shutdown closed or waited for; after a
// Shutdown cut short by its context, once Settle has returned nil (see
// Shutdown).
//
// It takes the broker's lock, so subscribing and cancelling wait for it; it
// never delays a publication. It costs time in proportion to the types the
// broker has routed and the subscriptions it holds (see
// BenchmarkSubscriptions), and allocates the result: cheap enough to call
// every second in production. Counts are read atomically one by one: values
// lost while the snapshot is taken may be counted or not.
func (b *Broker) Subscriptions() []SubscriptionStats {
	type item struct {
		typ string
		st  SubscriptionStats
	}
	b.mu.Lock()
	live := b.final // after Shutdown; never changes once set
	if live == nil {
		live = b.liveLocked()
	}
	b.mu.Unlock()
	// The counts are read without the lock: a follower of a compacted log
	// takes the log's lock for its lag, which a replay holds while it takes
	// the broker's.
	items := make([]item, len(live))
	for i, s := range live {
		st := s.stats()
		items[i] = item{st.Type.String(), st}
	}
	slices.SortStableFunc(items, func(x, y item) int {
		return cmp.Or(cmp.Compare(x.typ, y.typ), cmp.Compare(x.st.Name, y.st.Name))
	})
	out := make([]SubscriptionStats, len(items))
	for i, it := range items {
		out[i] = it.st
	}
	return out
}

// liveLocked returns every live subscription.
func (b *Broker) liveLocked() []subscriber {
	seen := make(map[subscriber]bool)
	var out []subscriber
	add := func(s subscriber) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, s := range b.wild {
		add(s)
	}
	for s := range b.held {
		add(s)
	}
	for _, e := range b.all {
		if !e.iface {
			e.edit.eachLocked(e, add)
		}
	}
	return out
}
