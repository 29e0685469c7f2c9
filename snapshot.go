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
	Capacity int          // the capacity of its channel (a handler's: of its queue)
	Queued   int          // the values in its channel (or queue), not yet received
	Lost     Lost         // the values it lost, by cause, since it began
	// Sent counts the values put in its channel since it began (a
	// handler's: in its queue). For a follower read without a channel (by
	// Read or Next, or by its handler) it counts the records read, and a
	// record read again, after a Seek or by AckWait, counts again.
	Sent uint64
	// Rejected counts the values its From functions rejected: filtered by
	// design, not lost.
	Rejected uint64
	// Matched counts the publications that reached it: those Sent or
	// Rejected, and those lost before they could be sent (Full, Failed,
	// Closed, Skipped, and what Shutdown left unread by a handler
	// follower). A value Evicted, Errored or Discarded from a queue was
	// sent first. So Lost.Total() out of Matched is its loss ratio (see
	// LossRatio), and once publishers have stopped and its channel is
	// drained, Matched equals the values received, plus Rejected, plus
	// Lost.Total().
	Matched uint64
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
	return json.Marshal(struct {
		Type     string         `json:"type"`
		Name     string         `json:"name"`
		Policy   Policy         `json:"policy"`
		Capacity int            `json:"capacity"`
		Queued   int            `json:"queued"`
		Lost     Lost           `json:"lost"`
		Sent     uint64         `json:"sent"`
		Rejected uint64         `json:"rejected"`
		Matched  uint64         `json:"matched"`
		Handler  *HandlerStats  `json:"handler,omitempty"`
		Follower *FollowerStats `json:"follower,omitempty"`
		Made     string         `json:"made,omitempty"`
	}{typeName(st.Type), st.Name, st.Policy, st.Capacity, st.Queued, st.Lost, st.Sent, st.Rejected, st.Matched, st.Handler, st.Follower, st.Made})
}

// LossRatio returns the share of what reached the subscription that it
// lost, Lost.Total() out of Matched: 0 for none, 1 for all, and 0 if
// nothing reached it.
func (st SubscriptionStats) LossRatio() float64 {
	if st.Matched == 0 {
		return 0
	}
	return float64(st.Lost.Total()) / float64(st.Matched)
}

// TopicStats describes the publications of one type.
type TopicStats struct {
	// Type is the type published, T of Publish[T]: the topic.
	Type reflect.Type
	// Published counts the publications of Type that found a subscription
	// since the broker began, and every publication of a retained type:
	// a publication that nothing matches costs nothing, and is not counted.
	Published uint64
	// Retained says whether the type is retained (see Broker.Retain).
	Retained bool
	// Reaches lists the subscriptions its publications reach now, ordered
	// by type (as printed), then name: who consumes what is published.
	Reaches []Reach
}

// A Reach is a subscription that a type's publications reach, and how.
type Reach struct {
	Type reflect.Type // the subscription's type, T of Subscribe[T]
	Name string       // as given by the Name option, or empty
	Made string       // where it was made (see SubscriptionStats.Made)
	// Via is the type of the subscription's source that takes the
	// publications: its own Type, an interface type that the published
	// type implements, or a From function's argument type.
	Via reflect.Type
	// From says a From function takes them: it converts them to Type, and
	// may reject them.
	From bool
}

// MarshalJSON encodes st with the types as printed.
//
//	{"type":"main.Order","published":40,"retained":false,
//	 "reaches":[{"type":"main.Order","name":"billing","made":"example.com/shop/billing.go:42","via":"main.Order","from":false}]}
func (st TopicStats) MarshalJSON() ([]byte, error) {
	type reach struct {
		Type string `json:"type"`
		Name string `json:"name"`
		Made string `json:"made,omitempty"`
		Via  string `json:"via"`
		From bool   `json:"from"`
	}
	reaches := make([]reach, len(st.Reaches))
	for i, r := range st.Reaches {
		reaches[i] = reach{typeName(r.Type), r.Name, r.Made, typeName(r.Via), r.From}
	}
	return json.Marshal(struct {
		Type      string  `json:"type"`
		Published uint64  `json:"published"`
		Retained  bool    `json:"retained"`
		Reaches   []reach `json:"reaches"`
	}{typeName(st.Type), st.Published, st.Retained, reaches})
}

// typeName is t as printed, "" for nil (the type of stats not made by the
// broker).
func typeName(t reflect.Type) string {
	if t == nil {
		return ""
	}
	return t.String()
}

// Topics returns the count of publications of every type the broker has
// routed (a type subscribed to, or published to a wildcard subscription),
// ordered by type (as printed). A publication through an interface type
// counts for the interface type. It takes the broker's lock, as
// Subscriptions does, and never delays a publication; after Shutdown it
// returns the final counts, those of publications Shutdown counted as
// Closed included.
//
// Counting costs no locked instruction where a publication sends to a
// plain or interface subscription: a plain addition on a word that the
// publisher holds alone for the moment it sends (its stripe of the
// lock-free section every send takes), for the type and for each
// subscription sent to; publishers on other stripes may write the same
// cache line. A publication dropped by the one subscription of a concrete
// type counts nothing more than its drop. One atomic addition counts the
// publication where it enters no such section: dropped by several
// subscriptions at once, or reaching only subscriptions with a From
// function, an OnLoss function or DropOldest (two of them or more; one
// alone counts inside its own section); a From function's rejection
// enters the section to count it (BenchmarkPublishFilterRejecting: about
// 5 ns more). Each subscription holds its counters, about 350 bytes
// (BenchmarkSubscriptionMemory).
func (b *Broker) Topics() []TopicStats {
	type reached struct {
		st  *TopicStats
		s   subscriber
		via reflect.Type
	}
	type madeReach struct {
		Reach
		pc uintptr
	}
	b.mu.Lock()
	byType := make(map[reflect.Type]*TopicStats)
	reaches := make(map[*TopicStats][]madeReach)
	seen := make(map[reached]bool)
	var out []*TopicStats
	for _, e := range b.all {
		if e.iface {
			continue // a header
		}
		n := e.published.load() + e.edit.aloneLocked(e)
		if c := e.log.Load(); c != nil && c.rec == e && n == 0 {
			continue // a retained type's records, never published but by its log
		}
		typ := e.edit.static()
		st := byType[typ]
		if st == nil {
			st = &TopicStats{Type: typ}
			byType[typ] = st
			out = append(out, st)
		}
		st.Published += n
		e.edit.eachSourceLocked(e, func(src source) {
			s := src.owner()
			if k := (reached{st, s, src.typ()}); seen[k] {
				return // an interface type's subscription, on the route of another dynamic type
			} else {
				seen[k] = true
			}
			typ, name, pc := s.ident()
			reaches[st] = append(reaches[st], madeReach{Reach{Type: typ, Name: name, Via: src.typ(), From: any(src) != any(s)}, pc})
		})
		if c := e.log.Load(); c != nil && c.rec != e { // the entry of T, not of Record[T]
			st.Published += c.mu.tail()
			st.Retained = true
		}
	}
	b.mu.Unlock()
	res := make([]TopicStats, len(out))
	for i, st := range out {
		res[i] = *st
		for _, r := range reaches[st] {
			r.Made = madeAt(r.pc) // without the lock: it may resolve a place
			res[i].Reaches = append(res[i].Reaches, r.Reach)
		}
		slices.SortStableFunc(res[i].Reaches, func(x, y Reach) int {
			return cmp.Or(cmp.Compare(x.Type.String(), y.Type.String()), cmp.Compare(x.Name, y.Name))
		})
	}
	slices.SortFunc(res, func(x, y TopicStats) int { return cmp.Compare(x.Type.String(), y.Type.String()) })
	return res
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
