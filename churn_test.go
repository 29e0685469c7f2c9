package topic_test

// Tests of subscriptions that come and go while publishers run (cancels
// burying outlets in place, routes compacted, solo routes switching in and
// out of their form), and of Shutdown racing them. None of them depends on
// timing: they fail by a panic (a send on a closed channel, a double
// close), a race report, a hang, or an exact count that does not add up
// once every goroutine has returned.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// The concrete types of the tests of this file, from_test.go and
// interface_test.go, published by them alone.
type (
	churnTick struct{ N int }    // concrete, implements fmt.Stringer
	churnSeq  struct{ G, I int } // concrete

	churnSoloA struct{ N int }
	churnSoloB struct{ N int }
)

func (t churnTick) String() string { return "tick " + strconv.Itoa(t.N) }

// heldSub is a subscription whose values a goroutine counts as they come,
// for exact accounting: once publishers have stopped, got plus its lost
// counts is every publication it matched.
type heldSub struct {
	name      string
	got       atomic.Int64
	done      chan struct{}
	cancel    func()
	lostTotal uint64 // Lost.Total() when checked
}

// countedPublishers starts n goroutines calling publish(g, i) for i = 0,
// 1, ... until stop is called; stop waits for them and returns how many
// calls they made in all.
func countedPublishers(n int, publish func(g, i int)) (stop func() int) {
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

// lazySub is a subscription received from only once it is closed: its
// buffer fills and the broker must count what it drops.
type lazySub[T any] struct {
	name   string
	ch     <-chan T
	cancel func()
}

func holdLazy[T any](b *topic.Broker, name string, opts ...topic.Option[T]) *lazySub[T] {
	opts = append(opts, topic.Name[T](name))
	ch, cancel := b.Subscribe(opts...)
	return &lazySub[T]{name, ch, cancel}
}

// statsByName returns the stats of the subscriptions by name, failing if a
// name is listed twice.
func statsByName(t *testing.T, b *topic.Broker) map[string]topic.SubscriptionStats {
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

// drainCount receives what a closed channel holds; it fails if the channel
// is still open.
func drainCount[T any](t *testing.T, name string, ch <-chan T) int {
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

// Many subscriptions of one type come and go (bursts cancelled
// oldest or newest first, so that tombstones pile up, routes are compacted
// and appends reuse spare capacity), while publishers run and held
// subscriptions of every kind sit on the same route. Every cancelled channel
// is closed when cancel returns, and every held subscription accounts for
// every publication exactly: received plus lost.
func TestSameTypeChurnAccountsForEveryPublication(t *testing.T) {
	var b topic.Broker
	const pubs = 2
	var held []*heldSub
	var onLoss atomic.Int64
	for i := range 4 {
		held = append(held, holdCounted[churnTick](&b, fmt.Sprint("plain ", i), topic.Buffer[churnTick](i)))
	}
	held = append(held, holdCounted[churnTick](&b, "drop oldest", topic.Buffer[churnTick](2), topic.Overflow[churnTick](topic.DropOldest)))
	held = append(held, holdCounted[churnTick](&b, "on loss", topic.Buffer[churnTick](1),
		topic.OnLoss(func(topic.Loss[churnTick]) { onLoss.Add(1) })))
	hooked := held[len(held)-1]
	held = append(held, holdCounted[fmt.Stringer](&b, "stringer", topic.Buffer[fmt.Stringer](1)))
	held = append(held, holdCounted[any](&b, "any", topic.Buffer[any](0)))
	lazies := []*lazySub[churnTick]{
		holdLazy(&b, "lazy 1", topic.Buffer[churnTick](1)),
		holdLazy(&b, "lazy 7", topic.Buffer[churnTick](7)),
		holdLazy(&b, "lazy oldest", topic.Buffer[churnTick](3), topic.Overflow[churnTick](topic.DropOldest)),
	}

	stopPubs := countedPublishers(pubs, func(g, i int) { b.Publish(churnTick{N: i}) })
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
					ch, cancel := b.Subscribe(topic.Buffer[churnTick](rng.IntN(3)))
					o = one{cancel, func() bool { return drainClosed(ch) }}
				case 3:
					ch, cancel := b.Subscribe(topic.Buffer[churnTick](2), topic.Overflow[churnTick](topic.DropOldest))
					o = one{cancel, func() bool { return drainClosed(ch) }}
				case 4:
					ch, cancel := b.Subscribe(topic.Buffer[fmt.Stringer](1))
					o = one{cancel, func() bool { return drainClosed(ch) }}
				default:
					ch, cancel := b.Subscribe(topic.Buffer[string](1),
						topic.From(func(t churnTick) (string, bool) { return t.String(), true }))
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
	checkHeld(t, &b, published, held, lazies)
	if got, want := onLoss.Load(), hooked.lostTotal; got != int64(want) {
		t.Errorf("%s: OnLoss called %d times, Lost.Total() = %d", hooked.name, got, want)
	}
	if listed, live := topic.Outlets[churnTick](&b); listed != 0 || live != 0 {
		t.Errorf("after every cancel: %d outlets listed, %d live; want none", listed, live)
	}
}

// holdCounted holds a subscription drained as it goes (holdLazy, one
// received from only once it is closed).
func holdCounted[T any](b *topic.Broker, name string, opts ...topic.Option[T]) *heldSub {
	h := &heldSub{name: name, done: make(chan struct{})}
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

// checkHeld checks that each held subscription received or lost want
// values, then cancels it (or, after Shutdown, just waits for its close).
func checkHeld[T any](t *testing.T, b *topic.Broker, want int, held []*heldSub, lazies []*lazySub[T]) {
	t.Helper()
	stats := statsByName(t, b)
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
		n := drainCount(t, l.name, l.ch)
		if got := uint64(n) + st.Lost.Total(); got != uint64(want) {
			t.Errorf("%s: received %d + lost %+v = %d, want %d publications", l.name, n, st.Lost, got, want)
		}
	}
}

// TestSameTypeChurnAccountsForEveryPublication for interface subscriptions:
// publishers publish through fmt.Stringer with several dynamic types (a
// route entry each) while interface subscriptions come and go; the held
// ones, plain, lazy, DropOldest and a From source of the interface type,
// account for every publication.
func TestInterfaceChurnAccountsForEveryPublication(t *testing.T) {
	var b topic.Broker
	const pubs = 2
	held := []*heldSub{
		holdCounted[fmt.Stringer](&b, "stringer 0", topic.Buffer[fmt.Stringer](0)),
		holdCounted[fmt.Stringer](&b, "stringer 2", topic.Buffer[fmt.Stringer](2)),
		holdCounted[any](&b, "any", topic.Buffer[any](1)),
		holdCounted[fmt.Stringer](&b, "oldest", topic.Buffer[fmt.Stringer](2), topic.Overflow[fmt.Stringer](topic.DropOldest)),
		holdCounted[string](&b, "from", topic.Buffer[string](1),
			topic.From(func(s fmt.Stringer) (string, bool) { return s.String(), true })),
	}
	lazies := []*lazySub[fmt.Stringer]{
		holdLazy(&b, "lazy 3", topic.Buffer[fmt.Stringer](3)),
		holdLazy(&b, "lazy oldest", topic.Buffer[fmt.Stringer](3), topic.Overflow[fmt.Stringer](topic.DropOldest)),
	}
	stopPubs := countedPublishers(pubs, func(g, i int) {
		var v fmt.Stringer
		switch i % 4 {
		case 0:
			v = ifaceVal{"x"}
		case 1:
			v = &ifacePtr{"y"}
		case 2:
			v = ifaceCode(g)
		default:
			v = churnTick{i}
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
	checkHeld(t, &b, published, held, lazies)
}

// Shutdown races cancels, subscriptions and publishers on routes
// with tombstones: no channel is sent to after it is closed or closed
// twice (a panic), every channel is closed once its cancel or Shutdown has
// returned, a Subscribe after Shutdown returns a closed channel, and each
// subscription Shutdown closed accounts for every publication: received,
// or lost (Full, Evicted, Closed), and reported to OnLoss if it has one.
func TestShutdownRacingCancelsAccountsForEveryPublication(t *testing.T) {
	var b topic.Broker
	const pubs = 2
	var onLoss atomic.Int64
	held := []*heldSub{
		holdCounted[churnTick](&b, "plain 0", topic.Buffer[churnTick](0)),
		holdCounted[churnTick](&b, "plain 1", topic.Buffer[churnTick](1)),
		holdCounted[churnTick](&b, "oldest", topic.Buffer[churnTick](1), topic.Overflow[churnTick](topic.DropOldest)),
		holdCounted[churnTick](&b, "on loss", topic.Buffer[churnTick](1),
			topic.OnLoss(func(topic.Loss[churnTick]) { onLoss.Add(1) })),
		holdCounted[fmt.Stringer](&b, "stringer", topic.Buffer[fmt.Stringer](1)),
		holdCounted[string](&b, "from", topic.Buffer[string](1),
			topic.From(func(t churnTick) (string, bool) { return t.String(), true })),
	}
	hooked := held[3]
	lazies := []*lazySub[churnTick]{
		holdLazy(&b, "lazy 2", topic.Buffer[churnTick](2)),
		holdLazy(&b, "lazy oldest", topic.Buffer[churnTick](2), topic.Overflow[churnTick](topic.DropOldest)),
	}
	stopPubs := countedPublishers(pubs, func(g, i int) { b.Publish(churnTick{N: i}) })
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
				var ch <-chan churnTick
				var cancel func()
				if rng.IntN(3) == 0 {
					ch, cancel = b.Subscribe(topic.Buffer[churnTick](1), topic.Overflow[churnTick](topic.DropOldest))
				} else {
					ch, cancel = b.Subscribe(topic.Buffer[churnTick](rng.IntN(2)))
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
	if ch, cancel := b.Subscribe[churnTick](); !drainClosed(ch) {
		t.Errorf("Subscribe after Shutdown returned an open channel")
		cancel()
	}
	checkHeld(t, &b, published, held, lazies)
	if got, want := onLoss.Load(), hooked.lostTotal; got != int64(want) {
		t.Errorf("%s: OnLoss called %d times, Lost.Total() = %d", hooked.name, got, want)
	}
	// Published after Shutdown returned: counted Closed on each.
	before := statsByName(t, &b)
	b.Publish(churnTick{N: -1})
	b.Publish(fmt.Stringer(churnTick{N: -2}))
	after := statsByName(t, &b)
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

// Cancel is idempotent, from several goroutines at once, for
// every kind of subscription, while publishers run: each call returns with
// the channel closed.
func TestConcurrentCancelsOfOneSubscriptionEachReturnWithItClosed(t *testing.T) {
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
				b.Publish(churnTick{N: i})
				b.Publish(fmt.Stringer(ifaceVal{"v"}))
			}
		})
	}
	_, cancelHeld := b.Subscribe(topic.Buffer[churnTick](0)) // a live outlet beside
	defer cancelHeld()
	var open atomic.Int64
	for i := range iterations(300) {
		var cancel func()
		var closed func() bool
		switch i % 4 {
		case 0:
			ch, c := b.Subscribe(topic.Buffer[churnTick](i % 3))
			cancel, closed = c, func() bool { return drainClosed(ch) }
		case 1:
			ch, c := b.Subscribe(topic.Buffer[fmt.Stringer](1))
			cancel, closed = c, func() bool { return drainClosed(ch) }
		case 2:
			ch, c := b.Subscribe(topic.Buffer[churnTick](1), topic.Overflow[churnTick](topic.DropOldest))
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
	if listed, live := topic.Outlets[churnTick](&b); live != 1 || listed > 2 {
		t.Errorf("%d outlets listed, %d live; want 1 live", listed, live)
	}
}

// A subscription registered before a Publish begins receives it,
// while other goroutines subscribe and cancel subscriptions of the same
// type (burying and compacting the route under the publication) and
// publish. Each goroutine's publications are bounded, so the buffers never
// fill: a value missing is a value lost uncounted.
func TestASubscriptionMadeBeforeAPublishReceivesItUnderChurn(t *testing.T) {
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
		_, cancel := b.Subscribe(topic.Buffer[churnSeq](goroutines*rounds + 1))
		defer cancel()
	}
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			var extra []func()
			for i := range rounds {
				ch, cancel := b.Subscribe(topic.Buffer[churnSeq](goroutines*rounds + 1))
				for range rng.IntN(3) {
					_, c := b.Subscribe(topic.Buffer[churnSeq](rng.IntN(2)))
					extra = append(extra, c)
				}
				if len(extra) > 6 {
					rng.Shuffle(len(extra), func(i, j int) { extra[i], extra[j] = extra[j], extra[i] })
					for _, c := range extra[:4] {
						c()
					}
					extra = slices.Delete(extra, 0, 4)
				}
				b.Publish(churnSeq{G: g, I: i})
				cancel()
				got := 0
				for v := range ch { // closed by cancel
					if v.G == g && v.I < i {
						fail("goroutine %d, round %d: received its own publication %d, made before it subscribed", g, i, v.I)
					}
					if v == (churnSeq{G: g, I: i}) {
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

// A route switches between its solo form (one source, a
// DropOldest subscription or a From source, called straight from Publish),
// a mixed form and back, as plain subscriptions of its type come and go
// (compaction empties the list of outlets), while publishers run: the held
// typed source accounts for every publication exactly, counting a From
// function's panics as Failed.
func TestASoloRouteSwitchingUnderChurnAccountsForEveryPublication(t *testing.T) {
	var b topic.Broker
	const pubs = 2
	held := []*heldSub{
		holdCounted[churnSoloA](&b, "solo oldest", topic.Buffer[churnSoloA](1), topic.Overflow[churnSoloA](topic.DropOldest)),
		holdCounted[string](&b, "solo from", topic.Buffer[string](1),
			topic.From(func(s churnSoloB) (string, bool) {
				if s.N%5 == 0 {
					panic("five")
				}
				return strconv.Itoa(s.N), true
			})),
	}
	lazies := []*lazySub[churnSoloA]{}
	var fives atomic.Int64
	stopPubs := countedPublishers(pubs, func(_, i int) {
		b.Publish(churnSoloA{i})
		if i%5 == 0 {
			fives.Add(1)
		}
		b.Publish(churnSoloB{i})
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
						ch, c := b.Subscribe(topic.Buffer[churnSoloA](rng.IntN(2)))
						cancels, checks = append(cancels, c), append(checks, func() bool { return drainClosed(ch) })
					} else {
						ch, c := b.Subscribe(topic.Buffer[churnSoloB](rng.IntN(2)))
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
	st := statsByName(t, &b)
	if got, want := st["solo from"].Lost.Failed, uint64(fives.Load()); got != want {
		t.Errorf("solo from: %d Failed, want %d", got, want)
	}
	checkHeld(t, &b, published, held, lazies)
}
