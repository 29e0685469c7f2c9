package topic_test

// Tests from the adversarial review of e012584 (cancel buries a plain
// subscription's outlet in place) and 5c6e313 (the solo source, the one
// deferred recover of a From source, queued, the itab of interface sources
// computed once per route entry, sendBoxed).
//
// None of them depends on timing: the concurrent ones fail by a panic (a
// send on a closed channel, a double close), a race report, a hang, or an
// exact count that does not add up once every goroutine has returned.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// The types of this file, published by it alone.
type (
	r13Tick struct{ N int }    // concrete, implements fmt.Stringer
	r13Seq  struct{ G, I int } // concrete
	r13Val  struct{ s string } // value receivers: fmt.Stringer, r13Kinder
	r13Ptr  struct{ s string } // pointer receivers: fmt.Stringer, r13Kinder, error; nil-safe
	r13Code int                // value receivers: error, fmt.Stringer (so r13Both)
	r13Zero struct{}           // value receiver: r13Kinder
	r13Big  [6]int64           // value receiver: fmt.Stringer; not pointer-shaped
	r13Lbl  string             // value receiver: fmt.Stringer; never published
	r13Str  string             // value receiver: fmt.Stringer

	r13SoloA struct{ N int }
	r13SoloB struct{ N int }
	r13Rec   struct{ N int } // retained; implements fmt.Stringer

	r13Kinder interface{ Kind() int }
	r13Both   interface {
		error
		fmt.Stringer
	}
	r13Empty interface{}
)

func (t r13Tick) String() string { return "tick " + strconv.Itoa(t.N) }
func (v r13Val) String() string  { return "val " + v.s }
func (v r13Val) Kind() int       { return 100 + len(v.s) }
func (p *r13Ptr) String() string {
	if p == nil {
		return "ptr <nil>"
	}
	return "ptr " + p.s
}
func (p *r13Ptr) Kind() int {
	if p == nil {
		return -1
	}
	return 200 + len(p.s)
}
func (p *r13Ptr) Error() string {
	if p == nil {
		return "ptr error <nil>"
	}
	return "ptr error " + p.s
}
func (c r13Code) Error() string  { return "code error " + strconv.Itoa(int(c)) }
func (c r13Code) String() string { return "code " + strconv.Itoa(int(c)) }
func (r13Zero) Kind() int        { return 0 }
func (b r13Big) String() string  { return fmt.Sprint("big ", [6]int64(b)) }
func (l r13Lbl) String() string  { return "label " + string(l) }
func (r r13Rec) String() string  { return "rec " + strconv.Itoa(r.N) }
func (s r13Str) String() string  { return "str " + string(s) }

// r13Held is a subscription whose values a goroutine counts as they come,
// for exact accounting: once publishers have stopped, got plus its lost
// counts is every publication it matched.
type r13Held struct {
	name      string
	got       atomic.Int64
	done      chan struct{}
	cancel    func()
	lostTotal uint64 // Lost.Total() when checked
}

// r13Publishers starts n goroutines calling publish(g, i) for i = 0, 1, ...
// until stop is called; stop waits for them and returns how many calls
// they made in all.
func r13Publishers(n int, publish func(g, i int)) (stop func() int) {
	var wg sync.WaitGroup
	var done atomic.Bool
	var total atomic.Int64
	for g := range n {
		wg.Go(func() {
			i := 0
			for ; !done.Load(); i++ {
				publish(g, i)
				if i%64 == 0 {
					runtime.Gosched()
				}
			}
			total.Add(int64(i))
		})
	}
	return func() int {
		done.Store(true)
		wg.Wait()
		return int(total.Load())
	}
}

// r13HoldLazy is a subscription received from only once it is closed: its
// buffer fills and the broker must count what it drops.
type r13Lazy[T any] struct {
	name   string
	ch     <-chan T
	cancel func()
}

func r13HoldLazy[T any](b *topic.Broker, name string, opts ...topic.Option[T]) *r13Lazy[T] {
	opts = append(opts, topic.Name[T](name))
	ch, cancel := b.Subscribe(opts...)
	return &r13Lazy[T]{name, ch, cancel}
}

// r13Stats returns the stats of the subscriptions by name, failing if a
// name is listed twice.
func r13Stats(t *testing.T, b *topic.Broker) map[string]topic.SubscriptionStats {
	t.Helper()
	m := make(map[string]topic.SubscriptionStats)
	for _, st := range b.Subscriptions() {
		if st.Name == "" {
			continue
		}
		if _, dup := m[st.Name]; dup {
			t.Fatalf("Subscriptions lists %q twice", st.Name)
		}
		m[st.Name] = st
	}
	return m
}

// r13Drain receives what a closed channel holds; it fails if the channel
// is still open.
func r13Drain[T any](t *testing.T, name string, ch <-chan T) int {
	t.Helper()
	n := 0
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return n
			}
			n++
		default:
			t.Errorf("%s: channel still open after cancel returned", name)
			return n
		}
	}
}

// Attack 1. Many subscriptions of one type come and go (bursts cancelled
// oldest or newest first, so that tombstones pile up, routes are compacted
// and appends reuse spare capacity), while publishers run and held
// subscriptions of every kind sit on the same route. Every cancelled channel
// is closed when cancel returns, and every held subscription accounts for
// every publication exactly: received plus lost.
func TestR13SameTypeChurnAccountsForEveryPublication(t *testing.T) {
	var b topic.Broker
	const pubs = 2
	var held []*r13Held
	var onLoss atomic.Int64
	for i := range 4 {
		held = append(held, r13HoldFunc[r13Tick](&b, fmt.Sprint("plain ", i), topic.Buffer[r13Tick](i)))
	}
	held = append(held, r13HoldFunc[r13Tick](&b, "drop oldest", topic.Buffer[r13Tick](2), topic.Overflow[r13Tick](topic.DropOldest)))
	held = append(held, r13HoldFunc[r13Tick](&b, "on loss", topic.Buffer[r13Tick](1),
		topic.OnLoss(func(topic.Loss[r13Tick]) { onLoss.Add(1) })))
	hooked := held[len(held)-1]
	held = append(held, r13HoldFunc[fmt.Stringer](&b, "stringer", topic.Buffer[fmt.Stringer](1)))
	held = append(held, r13HoldFunc[any](&b, "any", topic.Buffer[any](0)))
	lazies := []*r13Lazy[r13Tick]{
		r13HoldLazy(&b, "lazy 1", topic.Buffer[r13Tick](1)),
		r13HoldLazy(&b, "lazy 7", topic.Buffer[r13Tick](7)),
		r13HoldLazy(&b, "lazy oldest", topic.Buffer[r13Tick](3), topic.Overflow[r13Tick](topic.DropOldest)),
	}

	stopPubs := r13Publishers(pubs, func(g, i int) { b.Publish(r13Tick{N: i}) })
	var open atomic.Int64
	var churn sync.WaitGroup
	var snapshots atomic.Bool
	churn.Go(func() {
		// Snapshots list each subscription once, tombstones never.
		for !snapshots.Load() {
			seen := make(map[string]bool)
			for _, st := range b.Subscriptions() {
				if st.Name != "" && seen[st.Name] {
					t.Errorf("Subscriptions lists %q twice", st.Name)
				}
				seen[st.Name] = true
			}
			runtime.Gosched()
		}
	})
	for g := range 3 {
		churn.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 13))
			type one struct {
				cancel func()
				closed func() bool
			}
			var mine []one
			defer func() {
				if g == 0 {
					snapshots.Store(true)
				}
			}()
			for range iterations(1500) {
				var o one
				switch rng.IntN(6) {
				case 0, 1, 2:
					ch, cancel := b.Subscribe(topic.Buffer[r13Tick](rng.IntN(3)))
					o = one{cancel, func() bool { return drainClosed(ch) }}
				case 3:
					ch, cancel := b.Subscribe(topic.Buffer[r13Tick](2), topic.Overflow[r13Tick](topic.DropOldest))
					o = one{cancel, func() bool { return drainClosed(ch) }}
				case 4:
					ch, cancel := b.Subscribe(topic.Buffer[fmt.Stringer](1))
					o = one{cancel, func() bool { return drainClosed(ch) }}
				default:
					ch, cancel := b.Subscribe(topic.Buffer[string](1),
						topic.From(func(t r13Tick) (string, bool) { return t.String(), true }))
					o = one{cancel, func() bool { return drainClosed(ch) }}
				}
				mine = append(mine, o)
				if len(mine) >= 5+rng.IntN(12) {
					if rng.IntN(2) == 0 {
						slices.Reverse(mine)
					} else if rng.IntN(2) == 0 {
						rng.Shuffle(len(mine), func(i, j int) { mine[i], mine[j] = mine[j], mine[i] })
					}
					for _, o := range mine {
						o.cancel()
						if rng.IntN(4) == 0 {
							o.cancel()
						}
						if !o.closed() {
							open.Add(1)
						}
					}
					mine = mine[:0]
				}
			}
			for _, o := range mine {
				o.cancel()
				if !o.closed() {
					open.Add(1)
				}
			}
		})
	}
	churn.Wait()
	published := stopPubs()
	if n := open.Load(); n != 0 {
		t.Errorf("%d channels open after their cancel returned", n)
	}
	r13CheckHeld(t, &b, published, held, lazies)
	if got, want := onLoss.Load(), hooked.lostTotal; got != int64(want) {
		t.Errorf("%s: OnLoss called %d times, Lost.Total() = %d", hooked.name, got, want)
	}
	if listed, live := topic.Outlets[r13Tick](&b); listed != 0 || live != 0 {
		t.Errorf("after every cancel: %d outlets listed, %d live; want none", listed, live)
	}
}

// r13HoldFunc is r13Hold for a subscription drained as it goes.
func r13HoldFunc[T any](b *topic.Broker, name string, opts ...topic.Option[T]) *r13Held {
	h := &r13Held{name: name, done: make(chan struct{})}
	opts = append(opts, topic.Name[T](name))
	ch, cancel := b.Subscribe(opts...)
	h.cancel = cancel
	go func() {
		defer close(h.done)
		for range ch {
			h.got.Add(1)
		}
	}()
	return h
}

// r13CheckHeld checks that each held subscription received or lost want
// values, then cancels it (or, after Shutdown, just waits for its close).
func r13CheckHeld[T any](t *testing.T, b *topic.Broker, want int, held []*r13Held, lazies []*r13Lazy[T]) {
	t.Helper()
	stats := r13Stats(t, b)
	for _, h := range held {
		st, ok := stats[h.name]
		if !ok {
			t.Errorf("%s: not listed by Subscriptions", h.name)
			continue
		}
		h.lostTotal = st.Lost.Total()
		h.cancel()
		<-h.done
		if got := uint64(h.got.Load()) + h.lostTotal; got != uint64(want) {
			t.Errorf("%s: received %d + lost %+v = %d, want %d publications", h.name, h.got.Load(), st.Lost, got, want)
		}
	}
	for _, l := range lazies {
		st, ok := stats[l.name]
		if !ok {
			t.Errorf("%s: not listed by Subscriptions", l.name)
			continue
		}
		l.cancel()
		n := r13Drain(t, l.name, l.ch)
		if got := uint64(n) + st.Lost.Total(); got != uint64(want) {
			t.Errorf("%s: received %d + lost %+v = %d, want %d publications", l.name, n, st.Lost, got, want)
		}
	}
}

// r13Stringers publishes one value of each of several dynamic types through
// fmt.Stringer (each its own route entry of the static type fmt.Stringer)
// and the same values concretely, tagged with k; it returns what a
// subscription to fmt.Stringer should receive, as strings.
func r13PublishStringers(b *topic.Broker, k int) []string {
	ks := strconv.Itoa(k)
	vals := []fmt.Stringer{
		r13Val{ks}, &r13Ptr{ks}, r13Code(k), r13Big{int64(k), 1, 2, 3, 4, 5}, r13Tick{k}, r13Str(ks), (*r13Ptr)(nil),
	}
	var want []string
	for _, v := range vals {
		b.Publish(v)
		want = append(want, fmt.Sprintf("%T %s", v, v.String()))
	}
	b.Publish(r13Val{ks})
	b.Publish(&r13Ptr{ks})
	b.Publish(r13Code(k))
	b.Publish(r13Tick{k})
	want = append(want, "topic_test.r13Val val "+ks, "*topic_test.r13Ptr ptr "+ks, "topic_test.r13Code code "+ks, "topic_test.r13Tick tick "+ks)
	return want
}

func r13Describe(xs []fmt.Stringer) []string {
	var out []string
	for _, x := range xs {
		if x == nil {
			out = append(out, "<nil interface>")
			continue
		}
		out = append(out, fmt.Sprintf("%T %s", x, x.String()))
	}
	return out
}

// Attack 2. A plain subscription of an interface type is listed on the
// route of every dynamic type published through that interface (its `at`
// hint is then right for one of them at most), and on the routes of the
// concrete types as a boxed source. Cancelling such subscriptions one by
// one, in several orders, so that each of those routes buries and compacts
// on its own, leaves each of the others receiving every later publication,
// with its dynamic value, once, and closes the cancelled ones.
func TestR13CancelInterfaceSubscriptionsRoutedOnManyDynamicTypes(t *testing.T) {
	orders := map[string]func(n int) []int{
		"last first": func(n int) []int {
			o := make([]int, n)
			for i := range o {
				o[i] = n - 1 - i
			}
			return o
		},
		"first first": func(n int) []int {
			o := make([]int, n)
			for i := range o {
				o[i] = i
			}
			return o
		},
		"middle out": func(n int) []int {
			var o []int
			for d := 0; len(o) < n; d++ {
				if i := n/2 + d; i < n {
					o = append(o, i)
				}
				if i := n/2 - d - 1; d >= 0 && i >= 0 && len(o) < n {
					o = append(o, i)
				}
			}
			return o
		},
		"shuffled": func(n int) []int { return rand.New(rand.NewPCG(13, 13)).Perm(n) },
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			var b topic.Broker
			const n = 24
			chs := make([]<-chan fmt.Stringer, n)
			cancels := make([]func(), n)
			for i := range chs {
				if i%3 == 0 {
					// Each dynamic type's route gets its entry before some
					// subscriptions and after others: the routes list them
					// in different orders, at different indices.
					r13PublishStringers(&b, -1)
					for _, ch := range chs[:i] {
						takeAll(ch)
					}
				}
				chs[i], cancels[i] = b.Subscribe(topic.Buffer[fmt.Stringer](32))
			}
			// A subscription to any on the routes of values published
			// through any: another static type, another set of entries.
			anys, cancelAnys := b.Subscribe(topic.Buffer[any](64))
			defer cancelAnys()
			for _, ch := range chs {
				takeAll(ch)
			}
			takeAll(anys)
			gone := make([]bool, n)
			for k, i := range order(n) {
				cancels[i]()
				gone[i] = true
				if k%4 == 0 {
					cancels[i]()
				}
				want := r13PublishStringers(&b, k)
				b.Publish(any(r13Zero{})) // not a fmt.Stringer
				b.Publish(any(nil))
				for j, ch := range chs {
					if gone[j] {
						if got := takeAll(ch); len(got) != 0 || !isClosed(ch) {
							t.Fatalf("after cancel %d, cancelled subscription %d received %v (closed: %t)", k, j, r13Describe(got), isClosed(ch))
						}
						continue
					}
					if got := r13Describe(takeAll(ch)); !slices.Equal(got, want) {
						t.Fatalf("after cancel %d, subscription %d received\n%q\nwant\n%q", k, j, got, want)
					}
				}
				gotAny := takeAll(anys)
				if len(gotAny) != len(want)+2 || gotAny[len(gotAny)-2] != any(r13Zero{}) || gotAny[len(gotAny)-1] != nil {
					t.Fatalf("after cancel %d, the any subscription received %v", k, gotAny)
				}
			}
			if got := len(b.Subscriptions()); got != 1 {
				t.Errorf("%d subscriptions listed after cancelling all but one", got)
			}
		})
	}
}

// Attack 3. Attack 1 for interface subscriptions: publishers publish
// through fmt.Stringer with several dynamic types (a route entry each)
// while interface subscriptions come and go; the held ones, plain, lazy,
// DropOldest and a From source of the interface type, account for every
// publication.
func TestR13InterfaceChurnAccountsForEveryPublication(t *testing.T) {
	var b topic.Broker
	const pubs = 2
	held := []*r13Held{
		r13HoldFunc[fmt.Stringer](&b, "stringer 0", topic.Buffer[fmt.Stringer](0)),
		r13HoldFunc[fmt.Stringer](&b, "stringer 2", topic.Buffer[fmt.Stringer](2)),
		r13HoldFunc[any](&b, "any", topic.Buffer[any](1)),
		r13HoldFunc[fmt.Stringer](&b, "oldest", topic.Buffer[fmt.Stringer](2), topic.Overflow[fmt.Stringer](topic.DropOldest)),
		r13HoldFunc[string](&b, "from", topic.Buffer[string](1),
			topic.From(func(s fmt.Stringer) (string, bool) { return s.String(), true })),
	}
	lazies := []*r13Lazy[fmt.Stringer]{
		r13HoldLazy(&b, "lazy 3", topic.Buffer[fmt.Stringer](3)),
		r13HoldLazy(&b, "lazy oldest", topic.Buffer[fmt.Stringer](3), topic.Overflow[fmt.Stringer](topic.DropOldest)),
	}
	stopPubs := r13Publishers(pubs, func(g, i int) {
		var v fmt.Stringer
		switch i % 4 {
		case 0:
			v = r13Val{"x"}
		case 1:
			v = &r13Ptr{"y"}
		case 2:
			v = r13Code(g)
		default:
			v = r13Tick{i}
		}
		b.Publish(v)
	})
	var open atomic.Int64
	var churn sync.WaitGroup
	for g := range 2 {
		churn.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 31))
			var cancels []func()
			var checks []func() bool
			for range iterations(800) {
				switch rng.IntN(4) {
				case 0, 1:
					ch, cancel := b.Subscribe(topic.Buffer[fmt.Stringer](rng.IntN(2)))
					cancels, checks = append(cancels, cancel), append(checks, func() bool { return drainClosed(ch) })
				case 2:
					ch, cancel := b.Subscribe(topic.Buffer[any](1))
					cancels, checks = append(cancels, cancel), append(checks, func() bool { return drainClosed(ch) })
				default:
					ch, cancel := b.Subscribe(topic.Buffer[fmt.Stringer](1), topic.Overflow[fmt.Stringer](topic.DropOldest))
					cancels, checks = append(cancels, cancel), append(checks, func() bool { return drainClosed(ch) })
				}
				if len(cancels) >= 4+rng.IntN(8) {
					for _, k := range rng.Perm(len(cancels)) {
						cancels[k]()
						if !checks[k]() {
							open.Add(1)
						}
					}
					cancels, checks = cancels[:0], checks[:0]
				}
			}
			for k := range cancels {
				cancels[k]()
				if !checks[k]() {
					open.Add(1)
				}
			}
		})
	}
	churn.Wait()
	published := stopPubs()
	if n := open.Load(); n != 0 {
		t.Errorf("%d channels open after their cancel returned", n)
	}
	r13CheckHeld(t, &b, published, held, lazies)
}

// Attack 4. A From function subscribes, cancels and publishes during the
// publication that called it: it cancels plain subscriptions of the type
// being published (whose outlets the publication has just used), of its
// own source type and of its own subscription's type, subscribes new ones,
// and publishes the type it is called for again. Nothing is sent on a
// cancelled channel (a panic), every cancelled channel is closed when the
// cancel returns, and a subscription made before a publication receives
// it.
func TestR13FromFunctionChurnsTheRouteItIsCalledFrom(t *testing.T) {
	var b topic.Broker
	var mu sync.Mutex // guards pool; held by no publisher while it publishes
	type one struct {
		cancel func()
		closed func() bool
	}
	var pool []one
	var open atomic.Int64
	rng := rand.New(rand.NewPCG(1, 3)) // guarded by mu
	churn := func() {
		mu.Lock()
		defer mu.Unlock()
		for range 2 {
			if len(pool) > 0 {
				k := rng.IntN(len(pool))
				o := pool[k]
				pool = slices.Delete(pool, k, k+1)
				o.cancel()
				if !o.closed() {
					open.Add(1)
				}
			}
		}
		for range 2 {
			switch rng.IntN(3) {
			case 0:
				ch, cancel := b.Subscribe(topic.Buffer[r13Tick](rng.IntN(2)))
				pool = append(pool, one{cancel, func() bool { return drainClosed(ch) }})
			case 1:
				ch, cancel := b.Subscribe(topic.Buffer[string](1))
				pool = append(pool, one{cancel, func() bool { return drainClosed(ch) }})
			default:
				ch, cancel := b.Subscribe(topic.Buffer[r13Seq](1))
				pool = append(pool, one{cancel, func() bool { return drainClosed(ch) }})
			}
		}
	}
	var depth atomic.Int64
	strs, cancelStrs := b.Subscribe(
		topic.Buffer[string](1<<12),
		topic.From(func(t r13Tick) (string, bool) {
			churn()
			if depth.Add(1) < 3 {
				b.Publish(r13Tick{N: -t.N}) // re-entrant, the same type
			}
			depth.Add(-1)
			b.Publish(r13Seq{I: t.N})
			return t.String(), true
		}),
	)
	defer cancelStrs()
	// Beside it on the route of r13Tick, plain subscriptions that must
	// keep receiving.
	ticks, cancelTicks := b.Subscribe(topic.Buffer[r13Tick](1 << 12))
	defer cancelTicks()
	var wg sync.WaitGroup
	const perPub = 300
	for g := range 2 {
		wg.Go(func() {
			for i := range perPub {
				b.Publish(r13Tick{N: 1 + g*perPub + i})
			}
		})
	}
	wg.Wait()
	mu.Lock()
	for _, o := range pool {
		o.cancel()
		if !o.closed() {
			open.Add(1)
		}
	}
	pool = nil
	mu.Unlock()
	if n := open.Load(); n != 0 {
		t.Errorf("%d channels open after their cancel returned", n)
	}
	// Each publication from outside reached both, and so did each nested
	// one; nothing was lost (the buffers hold it all).
	gotTicks, gotStrs := takeAll(ticks), takeAll(strs)
	if len(gotTicks) != len(gotStrs) || len(gotTicks) < 2*perPub {
		t.Errorf("the plain subscription received %d values, the From subscription %d; want the same, at least %d", len(gotTicks), len(gotStrs), 2*perPub)
	}
	for _, st := range b.Subscriptions() {
		if st.Lost.Total() != 0 {
			t.Errorf("%v lost %+v", st.Type, st.Lost)
		}
	}
}

// Attack 5. A From function's panic loses the value for its subscription
// alone, on a route with every kind of source beside it (plain, DropOldest,
// OnLoss, interface, another From source listed after it), and as the only
// source of its route (the solo path). panic(nil) is a panic, not a
// Goexit. A From function that cancels its own subscription and then
// panics, or calls runtime.Goexit, has nothing counted or reported.
func TestR13FromPanicLosesTheValueForItsSubscriptionOnly(t *testing.T) {
	var b topic.Broker
	plain, c1 := b.Subscribe(topic.Buffer[r13Tick](8))
	defer c1()
	oldest, c2 := b.Subscribe(topic.Buffer[r13Tick](8), topic.Overflow[r13Tick](topic.DropOldest))
	defer c2()
	var hookedLog lossLog[r13Tick]
	hooked, c3 := b.Subscribe(topic.Buffer[r13Tick](8), topic.OnLoss(hookedLog.hook))
	defer c3()
	strs, c4 := b.Subscribe(topic.Buffer[fmt.Stringer](8))
	defer c4()
	var panicsLog lossLog[string]
	panics, c5 := b.Subscribe(topic.Name[string]("panics"), topic.Buffer[string](8), topic.OnLoss(panicsLog.hook),
		topic.From(func(t r13Tick) (string, bool) {
			switch t.N {
			case 1:
				panic("one")
			case 2:
				panic(nil)
			case 3:
				var m map[int]int
				//lint:ignore SA5000 the runtime error is the point
				m[0] = 1
			}
			return t.String(), true
		}))
	defer c5()
	after, c6 := b.Subscribe(topic.Name[int]("after"), topic.Buffer[int](8),
		topic.From(func(t r13Tick) (int, bool) { return t.N, true }))
	defer c6()
	for i := range 5 {
		if msg, panicked := panicMessage(func() { b.Publish(r13Tick{i}) }); panicked {
			t.Fatalf("Publish(%d) panicked: %s", i, msg)
		}
	}
	all := []r13Tick{{0}, {1}, {2}, {3}, {4}}
	wantReceived(t, "plain", plain, all...)
	wantReceived(t, "oldest", oldest, all...)
	wantReceived(t, "hooked", hooked, all...)
	if got := len(takeAll(strs)); got != 5 {
		t.Errorf("the fmt.Stringer subscription received %d values, want 5", got)
	}
	wantReceived(t, "after", after, 0, 1, 2, 3, 4)
	wantReceived(t, "panics", panics, "tick 0", "tick 4")
	wantLost(t, &b, "panics", topic.Lost{Failed: 3})
	wantLost(t, &b, "after", topic.Lost{})
	if got := hookedLog.all(); len(got) != 0 {
		t.Errorf("a subscription beside the panicking source had losses reported: %+v", got)
	}
	got := panicsLog.all()
	if len(got) != 3 {
		t.Fatalf("OnLoss of the panicking subscription received %+v, want 3 losses", got)
	}
	if got[0].Panic != "one" {
		t.Errorf("the first Panic = %#v, want \"one\"", got[0].Panic)
	}
	if _, ok := got[1].Panic.(*runtime.PanicNilError); !ok {
		t.Errorf("the Panic of panic(nil) = %#v, want a *runtime.PanicNilError", got[1].Panic)
	}
	if err, ok := got[2].Panic.(runtime.Error); !ok || !strings.Contains(err.Error(), "nil map") {
		t.Errorf("the Panic of a nil map write = %#v, want the runtime.Error", got[2].Panic)
	}

	// The solo path: the only source of its route.
	var soloLog lossLog[string]
	solo, c7 := b.Subscribe(topic.Name[string]("solo"), topic.Buffer[string](8), topic.OnLoss(soloLog.hook),
		topic.From(func(s r13SoloA) (string, bool) {
			if s.N%2 == 1 {
				panic(s.N)
			}
			return strconv.Itoa(s.N), true
		}))
	defer c7()
	for i := range 4 {
		if msg, panicked := panicMessage(func() { b.Publish(r13SoloA{i}) }); panicked {
			t.Fatalf("Publish(r13SoloA{%d}) panicked: %s", i, msg)
		}
	}
	wantReceived(t, "solo", solo, "0", "2")
	wantLost(t, &b, "solo", topic.Lost{Failed: 2})
	if got := soloLog.all(); len(got) != 2 || got[0].Panic != 1 || got[1].Panic != 3 {
		t.Errorf("solo OnLoss received %+v, want the panics 1 and 3", got)
	}

	// Cancelled by f itself before it panics or exits: nothing counted,
	// nothing reported, and the channel is closed.
	for _, exit := range []bool{false, true} {
		var log lossLog[string]
		var cancel func()
		ch, c := b.Subscribe(topic.Buffer[string](1), topic.OnLoss(log.hook),
			topic.From(func(s r13SoloB) (string, bool) {
				cancel()
				if exit {
					runtime.Goexit()
				}
				panic("after cancel")
			}))
		cancel = c
		var wg sync.WaitGroup
		wg.Go(func() {
			if msg, panicked := panicMessage(func() { b.Publish(r13SoloB{}) }); panicked {
				t.Errorf("Publish panicked: %s", msg)
			}
		})
		wg.Wait()
		if got := log.all(); len(got) != 0 {
			t.Errorf("exit=%t: a subscription cancelled by its From function had losses reported: %+v", exit, got)
		}
		if !drainClosed(ch) {
			t.Errorf("exit=%t: channel open after the From function cancelled it", exit)
		}
	}
}

// r13Pub is one publication of the model of attack 6: its static type and
// the value (nil for a nil interface value).
type r13Pub struct {
	static reflect.Type
	v      any
	do     func(b *topic.Broker)
}

func r13P[S any](v S) r13Pub {
	return r13Pub{reflect.TypeFor[S](), any(v), func(b *topic.Broker) { b.Publish(v) }}
}

// matches reports whether a source of type I matches p (see doc.go,
// Matching).
func (p r13Pub) matches(i reflect.Type) bool {
	return p.static == i || i == reflect.TypeFor[any]() || p.v != nil && reflect.TypeOf(p.v).Implements(i)
}

// r13Probe subscribes to the interface type I in every way a value reaches
// an interface source: plain, DropOldest, OnLoss with no buffer (every value
// lost, reported with its value), a From source of type I, and a From
// source of type I on a subscription of another interface type. desc
// describes a value by calling I's methods on it, so that a wrong method
// table shows.
type r13Probe struct {
	name    string
	collect func() map[string][]string
	want    func(pubs []r13Pub) []string
}

func r13NewProbe[I any](b *topic.Broker, name string, desc func(I) string) (*r13Probe, func()) {
	plain, c1 := b.Subscribe(topic.Buffer[I](256))
	oldest, c2 := b.Subscribe(topic.Buffer[I](256), topic.Overflow[I](topic.DropOldest))
	var mu sync.Mutex
	var lost []string
	_, c3 := b.Subscribe(topic.Buffer[I](0), topic.OnLoss(func(l topic.Loss[I]) {
		mu.Lock()
		defer mu.Unlock()
		if l.Cause != topic.Full {
			lost = append(lost, "cause "+l.Cause.String())
			return
		}
		lost = append(lost, desc(l.Value))
	}))
	from, c4 := b.Subscribe(topic.Buffer[string](256), topic.From(func(x I) (string, bool) { return desc(x), true }))
	// A subscription of type r13Lbl (no publication has that type) whose
	// only matching source is its From source of type I.
	lbl, c5 := b.Subscribe(topic.Buffer[r13Lbl](256), topic.From(func(x I) (r13Lbl, bool) { return r13Lbl(desc(x)), true }))
	descAll := func(xs []I) []string {
		var out []string
		for _, x := range xs {
			out = append(out, desc(x))
		}
		return out
	}
	p := &r13Probe{name: name}
	p.collect = func() map[string][]string {
		mu.Lock()
		defer mu.Unlock()
		var lbls []string
		for _, l := range takeAll(lbl) {
			lbls = append(lbls, string(l))
		}
		return map[string][]string{
			"plain":                descAll(takeAll(plain)),
			"DropOldest":           descAll(takeAll(oldest)),
			"OnLoss":               slices.Clone(lost),
			"From":                 takeAll(from),
			"From on another type": lbls,
		}
	}
	p.want = func(pubs []r13Pub) []string {
		var out []string
		for _, pub := range pubs {
			if !pub.matches(reflect.TypeFor[I]()) {
				continue
			}
			var x I
			if pub.v != nil {
				x = pub.v.(I)
			}
			out = append(out, desc(x))
		}
		return out
	}
	return p, func() { c1(); c2(); c3(); c4(); c5() }
}

// Attack 6. Interface subscriptions receive the dynamic value of every
// publication they match, with the method table of their own type:
// values with value and pointer receivers, non-pointer-shaped and
// zero-sized values, nil pointers, nil interface values, values published
// concretely and through several interfaces, many dynamic types on one
// static type. Each value is published twice: once as its route is made,
// once through the route made.
func TestR13InterfaceSourcesReceiveTheDynamicValue(t *testing.T) {
	var b topic.Broker
	var probes []*r13Probe
	add := func(p *r13Probe, cancel func()) {
		probes = append(probes, p)
		t.Cleanup(cancel)
	}
	add(r13NewProbe(&b, "fmt.Stringer", func(x fmt.Stringer) string {
		if x == nil {
			return "nil"
		}
		return fmt.Sprintf("%T %s", x, x.String())
	}))
	add(r13NewProbe(&b, "error", func(x error) string {
		if x == nil {
			return "nil"
		}
		return fmt.Sprintf("%T %s", x, x.Error())
	}))
	add(r13NewProbe(&b, "r13Kinder", func(x r13Kinder) string {
		if x == nil {
			return "nil"
		}
		return fmt.Sprintf("%T %d", x, x.Kind())
	}))
	add(r13NewProbe(&b, "r13Both", func(x r13Both) string {
		if x == nil {
			return "nil"
		}
		return fmt.Sprintf("%T %s / %s", x, x.Error(), x.String())
	}))
	anyDesc := func(x any) string {
		if x == nil {
			return "nil"
		}
		return fmt.Sprintf("%T %#v", x, x)
	}
	add(r13NewProbe(&b, "any", anyDesc))
	add(r13NewProbe(&b, "r13Empty", func(x r13Empty) string { return anyDesc(x) }))

	p1, p2 := &r13Ptr{"p1"}, &r13Ptr{"p2"}
	pubs := []r13Pub{
		r13P(r13Val{"a"}), r13P(p1), r13P(r13Code(3)), r13P(r13Zero{}), r13P(r13Big{1, 2, 3, 4, 5, 6}),
		r13P((*r13Ptr)(nil)), r13P(r13Tick{7}), r13P(r13Str("s")),
		r13P[fmt.Stringer](r13Val{"b"}), r13P[fmt.Stringer](p2), r13P[fmt.Stringer](r13Code(4)),
		r13P[fmt.Stringer](r13Big{7, 8, 9, 10, 11, 12}), r13P[fmt.Stringer]((*r13Ptr)(nil)), r13P[fmt.Stringer](nil),
		r13P[any](r13Val{"c"}), r13P[any](r13Code(5)), r13P[any](nil), r13P[any](r13Zero{}), r13P[any](p1), r13P[any](42),
		r13P[error](r13Code(6)), r13P[error](p2), r13P[error](nil),
		r13P[r13Kinder](r13Zero{}), r13P[r13Kinder](r13Val{"d"}), r13P[r13Kinder](nil), r13P[r13Kinder](p1),
		r13P[r13Both](r13Code(7)), r13P[r13Both](p2), r13P[r13Both](nil),
		r13P[r13Empty](r13Val{"e"}), r13P[r13Empty](nil), r13P[r13Empty](r13Big{}),
	}
	// Different values of the same dynamic types, through the routes made.
	more := []r13Pub{
		r13P(r13Val{"again"}), r13P[fmt.Stringer](r13Big{6, 5, 4, 3, 2, 1}), r13P[any](r13Code(-1)),
		r13P[r13Kinder](r13Val{"kind"}), r13P[error](&r13Ptr{"fresh"}),
	}
	all := slices.Concat(pubs, pubs, more)
	for _, p := range all {
		p.do(&b)
	}
	for _, p := range probes {
		want := p.want(all)
		for how, got := range p.collect() {
			if !slices.Equal(got, want) {
				t.Errorf("%s, %s: received\n%q\nwant\n%q", p.name, how, got, want)
			}
		}
	}
}

// Attack 7. Shutdown races cancels, subscriptions and publishers on routes
// with tombstones: no channel is sent to after it is closed or closed
// twice (a panic), every channel is closed once its cancel or Shutdown has
// returned, a Subscribe after Shutdown returns a closed channel, and each
// subscription Shutdown closed accounts for every publication: received,
// or lost (Full, Evicted, Closed), and reported to OnLoss if it has one.
func TestR13ShutdownRacingCancelsAccountsForEveryPublication(t *testing.T) {
	var b topic.Broker
	const pubs = 2
	var onLoss atomic.Int64
	held := []*r13Held{
		r13HoldFunc[r13Tick](&b, "plain 0", topic.Buffer[r13Tick](0)),
		r13HoldFunc[r13Tick](&b, "plain 1", topic.Buffer[r13Tick](1)),
		r13HoldFunc[r13Tick](&b, "oldest", topic.Buffer[r13Tick](1), topic.Overflow[r13Tick](topic.DropOldest)),
		r13HoldFunc[r13Tick](&b, "on loss", topic.Buffer[r13Tick](1),
			topic.OnLoss(func(topic.Loss[r13Tick]) { onLoss.Add(1) })),
		r13HoldFunc[fmt.Stringer](&b, "stringer", topic.Buffer[fmt.Stringer](1)),
		r13HoldFunc[string](&b, "from", topic.Buffer[string](1),
			topic.From(func(t r13Tick) (string, bool) { return t.String(), true })),
	}
	hooked := held[3]
	lazies := []*r13Lazy[r13Tick]{
		r13HoldLazy(&b, "lazy 2", topic.Buffer[r13Tick](2)),
		r13HoldLazy(&b, "lazy oldest", topic.Buffer[r13Tick](2), topic.Overflow[r13Tick](topic.DropOldest)),
	}
	stopPubs := r13Publishers(pubs, func(g, i int) { b.Publish(r13Tick{N: i}) })
	half := make(chan struct{})
	var wg sync.WaitGroup
	var shutdownErr error
	wg.Go(func() {
		<-half
		shutdownErr = b.Shutdown(context.Background())
	})
	var open atomic.Int64
	const rounds = 600
	for g := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var cancels []func()
			var checks []func() bool
			for i := range iterations(rounds) {
				if g == 0 && i == iterations(rounds)/2 {
					close(half)
				}
				var ch <-chan r13Tick
				var cancel func()
				if rng.IntN(3) == 0 {
					ch, cancel = b.Subscribe(topic.Buffer[r13Tick](1), topic.Overflow[r13Tick](topic.DropOldest))
				} else {
					ch, cancel = b.Subscribe(topic.Buffer[r13Tick](rng.IntN(2)))
				}
				cancels, checks = append(cancels, cancel), append(checks, func() bool { return drainClosed(ch) })
				if len(cancels) >= 3+rng.IntN(6) {
					for _, k := range rng.Perm(len(cancels)) {
						cancels[k]()
						if !checks[k]() {
							open.Add(1)
						}
					}
					cancels, checks = cancels[:0], checks[:0]
				}
			}
			for k := range cancels {
				cancels[k]()
				if !checks[k]() {
					open.Add(1)
				}
			}
		})
	}
	wg.Wait()
	published := stopPubs()
	if shutdownErr != nil {
		t.Fatalf("Shutdown: %v", shutdownErr)
	}
	if n := open.Load(); n != 0 {
		t.Errorf("%d channels open after their cancel returned", n)
	}
	if ch, cancel := b.Subscribe[r13Tick](); !drainClosed(ch) {
		t.Errorf("Subscribe after Shutdown returned an open channel")
		cancel()
	}
	r13CheckHeld(t, &b, published, held, lazies)
	if got, want := onLoss.Load(), hooked.lostTotal; got != int64(want) {
		t.Errorf("%s: OnLoss called %d times, Lost.Total() = %d", hooked.name, got, want)
	}
	// Published after Shutdown returned: counted Closed on each.
	before := r13Stats(t, &b)
	b.Publish(r13Tick{N: -1})
	b.Publish(fmt.Stringer(r13Tick{N: -2}))
	after := r13Stats(t, &b)
	for name, st := range after {
		want := uint64(1)
		if name == "stringer" {
			want = 2
		}
		if got := st.Lost.Closed - before[name].Lost.Closed; got != want {
			t.Errorf("%s: %d publications after Shutdown counted Closed, want %d", name, got, want)
		}
	}
}

// Attack 8. Cancel is idempotent, from several goroutines at once, for
// every kind of subscription, while publishers run: each call returns with
// the channel closed.
func TestR13ConcurrentCancelsOfOneSubscription(t *testing.T) {
	var b topic.Broker
	stop := make(chan struct{})
	var pubs sync.WaitGroup
	for range 2 {
		pubs.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				b.Publish(r13Tick{N: i})
				b.Publish(fmt.Stringer(r13Val{"v"}))
			}
		})
	}
	_, cancelHeld := b.Subscribe(topic.Buffer[r13Tick](0)) // a live outlet beside
	defer cancelHeld()
	var open atomic.Int64
	for i := range iterations(300) {
		var cancel func()
		var closed func() bool
		switch i % 4 {
		case 0:
			ch, c := b.Subscribe(topic.Buffer[r13Tick](i % 3))
			cancel, closed = c, func() bool { return drainClosed(ch) }
		case 1:
			ch, c := b.Subscribe(topic.Buffer[fmt.Stringer](1))
			cancel, closed = c, func() bool { return drainClosed(ch) }
		case 2:
			ch, c := b.Subscribe(topic.Buffer[r13Tick](1), topic.Overflow[r13Tick](topic.DropOldest))
			cancel, closed = c, func() bool { return drainClosed(ch) }
		default:
			ch, c := b.Subscribe(topic.Buffer[string](1), topic.From(func(s fmt.Stringer) (string, bool) { return s.String(), true }))
			cancel, closed = c, func() bool { return drainClosed(ch) }
		}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				cancel()
				if !closed() {
					open.Add(1)
				}
			})
		}
		wg.Wait()
	}
	close(stop)
	pubs.Wait()
	if n := open.Load(); n != 0 {
		t.Errorf("%d cancel calls returned with the channel open", n)
	}
	if listed, live := topic.Outlets[r13Tick](&b); live != 1 || listed > 2 {
		t.Errorf("%d outlets listed, %d live; want 1 live", listed, live)
	}
}

// Attack 9. A retained type with interface subscriptions of every kind
// beside its own subscriptions, a replay through a From source of an
// interface type, a Record replay and followers; values published as the
// type and through an interface; an interface subscription cancelled on
// the way; Shutdown, after which every subscription counts what reaches it
// as Closed.
func TestR13RetainedTypeWithInterfaceSubscriptions(t *testing.T) {
	var b topic.Broker
	b.Retain[r13Rec](topic.Retention{Count: 64, NoTime: true})
	for i := range 5 {
		b.Publish(r13Rec{i})
	}
	strs, cancelStrs := b.Subscribe(topic.Name[fmt.Stringer]("stringer"), topic.Buffer[fmt.Stringer](64))
	oldest, c1 := b.Subscribe(topic.Name[fmt.Stringer]("oldest"), topic.Buffer[fmt.Stringer](64), topic.Overflow[fmt.Stringer](topic.DropOldest))
	defer c1()
	var lossMu sync.Mutex
	var losses []string
	_, c2 := b.Subscribe(topic.Name[fmt.Stringer]("on loss"), topic.Buffer[fmt.Stringer](0), topic.OnLoss(func(l topic.Loss[fmt.Stringer]) {
		lossMu.Lock()
		defer lossMu.Unlock()
		if l.Value == nil {
			losses = append(losses, l.Cause.String())
			return
		}
		losses = append(losses, l.Cause.String()+" "+l.Value.String())
	}))
	defer c2()
	froms, c3 := b.Subscribe(topic.Name[string]("from"), topic.Buffer[string](64),
		topic.From(func(s fmt.Stringer) (string, bool) { return fmt.Sprintf("%T %s", s, s.String()), true }))
	defer c3()
	anys, c4 := b.Subscribe(topic.Name[any]("any"), topic.Buffer[any](64))
	defer c4()
	own, c5 := b.Subscribe(topic.Name[r13Rec]("own"), topic.Buffer[r13Rec](64), topic.Replay[r13Rec](topic.Earliest()))
	defer c5()
	recs, c6 := b.Subscribe(topic.Name[topic.Record[r13Rec]]("records"), topic.Buffer[topic.Record[r13Rec]](64),
		topic.Replay[topic.Record[r13Rec]](topic.Earliest()))
	defer c6()
	via, c7 := b.Subscribe(topic.Name[r13Rec]("via"), topic.Buffer[r13Rec](64), topic.Replay[r13Rec](topic.Earliest()),
		topic.From(func(s fmt.Stringer) (r13Rec, bool) {
			r, ok := s.(r13Rec)
			return r13Rec{r.N + 1000}, ok
		}))
	defer c7()
	follower := b.Follow[r13Rec](topic.Name[r13Rec]("follower"), topic.Replay[r13Rec](topic.Earliest()))
	defer follower.Close()
	chf, c8 := b.Subscribe(topic.Name[r13Rec]("channel follower"), topic.Follow[r13Rec](), topic.Buffer[r13Rec](64),
		topic.Replay[r13Rec](topic.Earliest()))
	defer c8()

	for i := 5; i < 10; i++ {
		b.Publish(r13Rec{i})
	}
	b.Publish(fmt.Stringer(r13Rec{10}))
	gotStrs := r13Describe(takeAll(strs))
	cancelStrs()
	if !isClosed(strs) {
		t.Errorf("stringer: open after cancel")
	}
	b.Publish(r13Rec{11})

	live := []int{5, 6, 7, 8, 9, 10, 11}
	var wantStrs, wantFrom, wantLoss []string
	for _, n := range live {
		wantStrs = append(wantStrs, fmt.Sprintf("topic_test.r13Rec rec %d", n))
		wantLoss = append(wantLoss, fmt.Sprintf("full rec %d", n))
	}
	wantFrom = wantStrs
	if !slices.Equal(gotStrs, wantStrs[:6]) {
		t.Errorf("stringer received %q, want %q", gotStrs, wantStrs[:6])
	}
	if got := r13Describe(takeAll(oldest)); !slices.Equal(got, wantStrs) {
		t.Errorf("oldest received %q, want %q", got, wantStrs)
	}
	if got := takeAll(froms); !slices.Equal(got, wantFrom) {
		t.Errorf("from received %q, want %q", got, wantFrom)
	}
	var wantAny []any
	for _, n := range live {
		wantAny = append(wantAny, r13Rec{n})
	}
	if got := takeAll(anys); !slices.Equal(got, wantAny) {
		t.Errorf("any received %v, want %v", got, wantAny)
	}
	ownWant := []r13Rec{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {11}}
	if got := takeAll(own); !slices.Equal(got, ownWant) {
		t.Errorf("own received %v, want %v", got, ownWant)
	}
	var gotRecs []r13Rec
	for i, r := range takeAll(recs) {
		if r.Offset != uint64(i) {
			t.Errorf("record %d has offset %d", i, r.Offset)
		}
		gotRecs = append(gotRecs, r.Value)
	}
	if !slices.Equal(gotRecs, ownWant) {
		t.Errorf("records received %v, want %v", gotRecs, ownWant)
	}
	var viaWant []r13Rec
	for i := range 12 {
		viaWant = append(viaWant, r13Rec{1000 + i})
	}
	if got := takeAll(via); !slices.Equal(got, viaWant) {
		t.Errorf("via (Replay through a From source of fmt.Stringer) received %v, want %v", got, viaWant)
	}
	buf := make([]topic.Record[r13Rec], 32)
	var gotF []r13Rec
	for _, r := range buf[:follower.Read(buf)] {
		gotF = append(gotF, r.Value)
	}
	if !slices.Equal(gotF, ownWant) {
		t.Errorf("follower read %v, want %v", gotF, ownWant)
	}
	var gotCF []r13Rec
	for range ownWant {
		gotCF = append(gotCF, <-chf) // its pump feeds it: receiving waits for it
	}
	if !slices.Equal(gotCF, ownWant) {
		t.Errorf("channel follower received %v, want %v", gotCF, ownWant)
	}

	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	before := r13Stats(t, &b)
	b.Publish(r13Rec{12})
	b.Publish(fmt.Stringer(r13Rec{13}))
	after := r13Stats(t, &b)
	wantClosed := map[string]uint64{
		"oldest": 2, "on loss": 2, "from": 2, "any": 2, "own": 1, "records": 1, "via": 2,
		"follower": 1, "channel follower": 1,
	}
	for name, want := range wantClosed {
		if got := after[name].Lost.Closed - before[name].Lost.Closed; got != want {
			t.Errorf("%s: %d publications after Shutdown counted Closed, want %d", name, got, want)
		}
	}
	lossMu.Lock()
	wantLoss = append(wantLoss, "closed rec 12", "closed rec 13")
	if !slices.Equal(losses, wantLoss) {
		t.Errorf("on loss: OnLoss received %q, want %q", losses, wantLoss)
	}
	lossMu.Unlock()
}

// Attack 10. A subscription registered before a Publish begins receives it,
// while other goroutines subscribe and cancel subscriptions of the same
// type (burying and compacting the route under the publication) and
// publish. Each goroutine's publications are bounded, so the buffers never
// fill: a value missing is a value lost uncounted.
func TestR13SubscribedBeforePublishReceivesItUnderChurn(t *testing.T) {
	var b topic.Broker
	const goroutines, rounds = 3, 300
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	// Long-lived subscriptions beside, so that the route has many outlets.
	for range 8 {
		_, cancel := b.Subscribe(topic.Buffer[r13Seq](goroutines*rounds + 1))
		defer cancel()
	}
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			var extra []func()
			for i := range rounds {
				ch, cancel := b.Subscribe(topic.Buffer[r13Seq](goroutines*rounds + 1))
				for range rng.IntN(3) {
					_, c := b.Subscribe(topic.Buffer[r13Seq](rng.IntN(2)))
					extra = append(extra, c)
				}
				if len(extra) > 6 {
					rng.Shuffle(len(extra), func(i, j int) { extra[i], extra[j] = extra[j], extra[i] })
					for _, c := range extra[:4] {
						c()
					}
					extra = slices.Delete(extra, 0, 4)
				}
				b.Publish(r13Seq{G: g, I: i})
				cancel()
				got := 0
				for v := range ch { // closed by cancel
					if v.G == g && v.I < i {
						fail("goroutine %d, round %d: received its own publication %d, made before it subscribed", g, i, v.I)
					}
					if v == (r13Seq{G: g, I: i}) {
						got++
					}
				}
				if got != 1 {
					fail("goroutine %d, round %d: received its publication %d times, want once", g, i, got)
				}
			}
			for _, c := range extra {
				c()
			}
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
}

// Attack 11. A route switches between its solo form (one source, a
// DropOldest subscription or a From source, called straight from Publish),
// a mixed form and back, as plain subscriptions of its type come and go
// (compaction empties the list of outlets), while publishers run: the held
// typed source accounts for every publication exactly, counting a From
// function's panics as Failed.
func TestR13SoloRouteSwitchingUnderChurn(t *testing.T) {
	var b topic.Broker
	const pubs = 2
	held := []*r13Held{
		r13HoldFunc[r13SoloA](&b, "solo oldest", topic.Buffer[r13SoloA](1), topic.Overflow[r13SoloA](topic.DropOldest)),
		r13HoldFunc[string](&b, "solo from", topic.Buffer[string](1),
			topic.From(func(s r13SoloB) (string, bool) {
				if s.N%5 == 0 {
					panic("five")
				}
				return strconv.Itoa(s.N), true
			})),
	}
	lazies := []*r13Lazy[r13SoloA]{}
	var fives atomic.Int64
	stopPubs := r13Publishers(pubs, func(_, i int) {
		b.Publish(r13SoloA{i})
		if i%5 == 0 {
			fives.Add(1)
		}
		b.Publish(r13SoloB{i})
	})
	var open atomic.Int64
	var churn sync.WaitGroup
	for g := range 2 {
		churn.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 5))
			for range iterations(600) {
				var cancels []func()
				var checks []func() bool
				for range 1 + rng.IntN(4) {
					if rng.IntN(2) == 0 {
						ch, c := b.Subscribe(topic.Buffer[r13SoloA](rng.IntN(2)))
						cancels, checks = append(cancels, c), append(checks, func() bool { return drainClosed(ch) })
					} else {
						ch, c := b.Subscribe(topic.Buffer[r13SoloB](rng.IntN(2)))
						cancels, checks = append(cancels, c), append(checks, func() bool { return drainClosed(ch) })
					}
				}
				for _, k := range rng.Perm(len(cancels)) {
					cancels[k]()
					if !checks[k]() {
						open.Add(1)
					}
				}
			}
		})
	}
	churn.Wait()
	published := stopPubs()
	if n := open.Load(); n != 0 {
		t.Errorf("%d channels open after their cancel returned", n)
	}
	st := r13Stats(t, &b)
	if got, want := st["solo from"].Lost.Failed, uint64(fives.Load()); got != want {
		t.Errorf("solo from: %d Failed, want %d", got, want)
	}
	r13CheckHeld(t, &b, published, held, lazies)
}

// r13Exit is published by attack 12 alone.
type r13Exit struct{ N int }

// Attack 12. A From function calling runtime.Goexit is counted as Failed
// for its subscription (5c6e313); the publisher's goroutine then ends. The
// subscriptions listed after it on the route never receive the value: is
// that loss counted (doc.go: "Nothing is lost silently")?
func TestR13GoexitInAFromFunctionLosesNothingUncountedBesideIt(t *testing.T) {
	var b topic.Broker
	plain, c1 := b.Subscribe(topic.Name[r13Exit]("plain"), topic.Buffer[r13Exit](1))
	defer c1()
	_, c2 := b.Subscribe(topic.Name[string]("exits"), topic.Buffer[string](1),
		topic.From(func(r13Exit) (string, bool) { runtime.Goexit(); return "", true }))
	defer c2()
	oldest, c3 := b.Subscribe(topic.Name[r13Exit]("oldest after"), topic.Buffer[r13Exit](1), topic.Overflow[r13Exit](topic.DropOldest))
	defer c3()
	from, c4 := b.Subscribe(topic.Name[int]("from after"), topic.Buffer[int](1),
		topic.From(func(e r13Exit) (int, bool) { return e.N, true }))
	defer c4()
	var wg sync.WaitGroup
	wg.Go(func() { b.Publish(r13Exit{1}) })
	wg.Wait()
	wantReceived(t, "plain", plain, r13Exit{1})
	wantLost(t, &b, "exits", topic.Lost{Failed: 1})
	st := r13Stats(t, &b)
	if got := len(takeAll(oldest)); got+int(st["oldest after"].Lost.Total()) != 1 {
		t.Errorf("oldest after: received %d, lost %+v: the publication is neither received nor counted", got, st["oldest after"].Lost)
	}
	if got := len(takeAll(from)); got+int(st["from after"].Lost.Total()) != 1 {
		t.Errorf("from after: received %d, lost %+v: the publication is neither received nor counted", got, st["from after"].Lost)
	}
}

// Attack 13. Handlers of interface types (plain subscriptions sent to by
// boxedOut.send, their queue their channel) receive the dynamic values, and
// cancelling one by its stop while publishers run closes it cleanly.
func TestR13InterfaceHandlersReceiveTheDynamicValue(t *testing.T) {
	var b topic.Broker
	var mu sync.Mutex
	var got []string
	stop := b.Handle(func(_ context.Context, s fmt.Stringer) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%T %s", s, s.String()))
		return nil
	}, topic.Buffer[fmt.Stringer](64))
	var kinds []string
	stopKinds := b.Handle(func(_ context.Context, k r13Kinder) error {
		mu.Lock()
		defer mu.Unlock()
		kinds = append(kinds, fmt.Sprintf("%T %d", k, k.Kind()))
		return nil
	}, topic.Buffer[r13Kinder](64))
	defer stopKinds()
	b.Publish(r13Val{"a"})
	b.Publish(&r13Ptr{"bb"})
	b.Publish(fmt.Stringer(r13Code(3)))
	b.Publish(r13Kinder(r13Zero{}))
	b.Publish(any(&r13Ptr{"ccc"}))
	b.Publish(r13Big{1})
	if err := topictestSettle(&b); err != nil {
		t.Fatal(err)
	}
	stop()
	b.Publish(r13Val{"after stop"})
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"topic_test.r13Val val a", "*topic_test.r13Ptr ptr bb", "topic_test.r13Code code 3", "*topic_test.r13Ptr ptr ccc", "topic_test.r13Big big [1 0 0 0 0 0]"}
	if !slices.Equal(got, want) {
		t.Errorf("the fmt.Stringer handler received %q, want %q", got, want)
	}
	wantKinds := []string{"topic_test.r13Val 101", "*topic_test.r13Ptr 202", "topic_test.r13Zero 0", "*topic_test.r13Ptr 203", "topic_test.r13Val 110"}
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("the r13Kinder handler received %q, want %q", kinds, wantKinds)
	}
}

func topictestSettle(b *topic.Broker) error { return b.Settle(context.Background()) }

// r13Alert is what the OnLoss function of attack 15 publishes.
type r13Alert struct{ N int }

// Attack 14. queued reads a channel's count from the runtime's header: a
// plain route's full-buffer check before the guard must see a channel with
// room as having room, whatever the element type, and count a drop only
// when the buffer is full.
func TestR13FullBufferCheckSeesTheRoomLeft(t *testing.T) {
	r13CheckRoom(t, func(int) struct{} { return struct{}{} })
	r13CheckRoom(t, func(i int) [3]int64 { return [3]int64{int64(i)} })
	r13CheckRoom(t, func(i int) string { return strconv.Itoa(i) })
	r13CheckRoom(t, func(i int) [200]byte { return [200]byte{byte(i)} })
	r13CheckRoom(t, func(i int) *r13Ptr { return &r13Ptr{strconv.Itoa(i)} })
}

func r13CheckRoom[T any](t *testing.T, mk func(int) T) {
	t.Helper()
	for _, size := range []int{1, 2, 3, 8, 64} {
		var b topic.Broker
		full, c1 := b.Subscribe(topic.Name[T]("full"), topic.Buffer[T](size))
		room, c2 := b.Subscribe(topic.Name[T]("room"), topic.Buffer[T](size+1))
		for i := range size {
			b.Publish(mk(i))
		}
		// full is full; room has one place left.
		b.Publish(mk(size))
		if q := statsNamed(t, &b, "room").Queued; q != size+1 {
			t.Errorf("%T, size %d: the subscription with room holds %d values, want %d", *new(T), size, q, size+1)
		}
		wantLost(t, &b, "full", topic.Lost{Full: 1})
		wantLost(t, &b, "room", topic.Lost{})
		// Both full: both drop, counted.
		b.Publish(mk(0))
		wantLost(t, &b, "full", topic.Lost{Full: 2})
		wantLost(t, &b, "room", topic.Lost{Full: 1})
		if n := len(takeAll(full)); n != size {
			t.Errorf("%T, size %d: the full subscription held %d values, want %d", *new(T), size, n, size)
		}
		if n := len(takeAll(room)); n != size+1 {
			t.Errorf("%T, size %d: the subscription with room held %d values, want %d", *new(T), size, n, size+1)
		}
		c1()
		c2()
	}
}

// Attack 15. The one deferred recover of a From source: a From function
// that panics inside a Publish made by a deferred call while the goroutine
// is panicking is counted as Failed, and the goroutine's own panic goes on
// (is not recovered by the broker); one that returns normally there
// delivers. An OnLoss function reporting the panic may publish, reaching a
// From function that panics in turn.
func TestR13FromPanicDuringAPanicAndFromOnLoss(t *testing.T) {
	var b topic.Broker
	var log lossLog[string]
	ch, c1 := b.Subscribe(topic.Name[string]("panics"), topic.Buffer[string](4), topic.OnLoss(func(l topic.Loss[string]) {
		log.hook(l)
		b.Publish(r13Alert{1})
	}), topic.From(func(t r13Tick) (string, bool) {
		if t.N == 1 {
			panic("inner")
		}
		return t.String(), true
	}))
	defer c1()
	alerts, c2 := b.Subscribe(topic.Name[r13Alert]("alerts"), topic.Buffer[r13Alert](4))
	defer c2()
	_, c3 := b.Subscribe(topic.Name[string]("alert panics"), topic.Buffer[string](4),
		topic.From(func(r13Alert) (string, bool) { panic("alert") }))
	defer c3()
	for _, n := range []int{0, 1} {
		outer := func() (r any) {
			defer func() { r = recover() }()
			defer b.Publish(r13Tick{n})
			panic("outer")
		}()
		if outer != "outer" {
			t.Errorf("publishing %d from a deferred call: the goroutine's panic became %#v, want \"outer\"", n, outer)
		}
	}
	wantReceived(t, "panics", ch, "tick 0")
	wantLost(t, &b, "panics", topic.Lost{Failed: 1})
	wantReceived(t, "alerts", alerts, r13Alert{1})
	wantLost(t, &b, "alert panics", topic.Lost{Failed: 1})
	if got := log.all(); len(got) != 1 || got[0].Panic != "inner" {
		t.Errorf("OnLoss received %+v, want the panic \"inner\"", got)
	}
}

// r13Kept is retained by attack 16.
type r13Kept struct{ N int }

// Attack 16. After Shutdown, a publication of a retained type is counted
// Closed once on a subscription to any (or to an empty interface, or with a
// From source of any), as it would have reached it once: live, such a
// subscription receives the value, never its Record (retain.go
// sendOrdered).
func TestR13RetainedPublicationAfterShutdownCountedOnceOnAnInterfaceSubscription(t *testing.T) {
	var b topic.Broker
	b.Retain[r13Kept](topic.Retention{Count: 8, NoTime: true})
	anys, c1 := b.Subscribe(topic.Name[any]("any"), topic.Buffer[any](8))
	defer c1()
	empties, c2 := b.Subscribe(topic.Name[r13Empty]("empty"), topic.Buffer[r13Empty](8))
	defer c2()
	froms, c3 := b.Subscribe(topic.Name[string]("from any"), topic.Buffer[string](8),
		topic.From(func(x any) (string, bool) { return fmt.Sprintf("%T", x), true }))
	defer c3()
	b.Publish(r13Kept{1})
	if got := takeAll(anys); !slices.Equal(got, []any{r13Kept{1}}) {
		t.Errorf("any received %v live, want [{1}]", got)
	}
	if got := len(takeAll(empties)); got != 1 {
		t.Errorf("empty received %d values live, want 1", got)
	}
	if got := takeAll(froms); !slices.Equal(got, []string{"topic_test.r13Kept"}) {
		t.Errorf("from any received %q live, want [topic_test.r13Kept]", got)
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.Publish(r13Kept{2})
	for name, st := range r13Stats(t, &b) {
		if st.Lost != (topic.Lost{Closed: 1}) {
			t.Errorf("%s: one publication after Shutdown counted %+v, want Closed: 1", name, st.Lost)
		}
	}
}
