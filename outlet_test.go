package topic_test

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// outletTick is published only by the tests of this file.
type outletTick struct{ N int }

// Cancelling subscriptions of one type, in any order, leaves the others
// routed, each receiving every publication once, closes the cancelled ones,
// and keeps the route's list within twice the live subscriptions (cancel
// leaves a tombstone, and a route whose tombstones outnumber its live
// outlets is compacted).
func TestCancelManyOfOneTypeKeepsTheRestRouted(t *testing.T) {
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
		"every other, then the rest": func(n int) []int {
			var o []int
			for i := 0; i < n; i += 2 {
				o = append(o, i)
			}
			for i := 1; i < n; i += 2 {
				o = append(o, i)
			}
			return o
		},
		"shuffled": func(n int) []int {
			return rand.New(rand.NewPCG(1, 2)).Perm(n)
		},
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			var b topic.Broker
			const n = 64
			chs := make([]<-chan outletTick, n)
			cancels := make([]func(), n)
			for i := range chs {
				chs[i], cancels[i] = b.Subscribe[outletTick]()
			}
			gone := make([]bool, n)
			for k, i := range order(n) {
				cancels[i]()
				gone[i] = true
				if k%3 == 0 {
					cancels[i]() // idempotent, and no second tombstone
				}
				b.Publish(outletTick{N: k})
				for j, ch := range chs {
					v, ok := <-ch // never blocks: closed, or holding the publication
					switch {
					case gone[j] && ok:
						t.Fatalf("after cancel %d, subscription %d (cancelled) received %v", k, j, v)
					case !gone[j] && (!ok || v.N != k):
						t.Fatalf("after cancel %d, subscription %d received %v, %t; want {%d}", k, j, v, ok, k)
					}
				}
				listed, live := topic.Outlets[outletTick](&b)
				if want := n - 1 - k; live != want || listed > 2*live {
					t.Fatalf("after cancel %d: %d outlets listed, %d live; want %d live and at most %d listed", k, listed, live, want, 2*want)
				}
			}
			if listed, _ := topic.Outlets[outletTick](&b); listed != 0 {
				t.Errorf("%d outlets listed once every subscription is cancelled", listed)
			}
			// Subscribing again after the route emptied routes again.
			ch, cancel := b.Subscribe[outletTick]()
			defer cancel()
			b.Publish(outletTick{N: -1})
			if v := <-ch; v.N != -1 {
				t.Errorf("a new subscription received %v", v)
			}
		})
	}
}

// Publishers of one type run while subscriptions of that type come and go
// beside many held ones: the cancels bury outlets and compact the route
// under the publishers. No cancelled channel is sent to (that would panic),
// every cancelled channel is closed, and every held subscription still
// receives each later publication.
func TestSameTypeChurnUnderPublishers(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	const held = 100
	chs := make([]<-chan outletTick, held)
	for i := range chs {
		var cancel func()
		chs[i], cancel = b.Subscribe(topic.Buffer[outletTick](1))
		defer cancel()
	}
	var stop atomic.Bool
	var pubs sync.WaitGroup
	for range 2 {
		pubs.Go(func() {
			for i := 0; !stop.Load(); i++ {
				b.Publish(outletTick{N: i})
			}
		})
	}
	var wg sync.WaitGroup
	var open atomic.Int64
	for g := range 3 {
		wg.Go(func() {
			var mine []func()
			var closedChecks []func() bool
			for i := range iterations(2000) {
				ch, cancel := b.Subscribe(topic.Buffer[outletTick](i % 2))
				mine = append(mine, cancel)
				closedChecks = append(closedChecks, func() bool { return drainClosed(ch) })
				// Cancel in bursts, oldest or newest first, so that
				// tombstones pile up and routes get compacted.
				if len(mine) == 8+g {
					for k := len(mine) - 1; k >= 0; k-- {
						j := k
						if i%2 == 0 {
							j = len(mine) - 1 - k
						}
						mine[j]()
						if !closedChecks[j]() {
							open.Add(1)
						}
					}
					mine, closedChecks = mine[:0], closedChecks[:0]
				}
			}
			for k := range mine {
				mine[k]()
				if !closedChecks[k]() {
					open.Add(1)
				}
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	pubs.Wait()
	if n := open.Load(); n != 0 {
		t.Errorf("%d channels still open after cancel returned", n)
	}
	for _, ch := range chs {
		drainClosed(ch)
	}
	b.Publish(outletTick{N: -1})
	for i, ch := range chs {
		select {
		case v := <-ch:
			if v.N != -1 {
				t.Fatalf("held subscription %d received %v, want {-1}", i, v)
			}
		default:
			t.Fatalf("held subscription %d did not receive the publication after the churn", i)
		}
	}
	if listed, live := topic.Outlets[outletTick](&b); live != held || listed > 2*held {
		t.Errorf("%d outlets listed, %d live; want %d live", listed, live, held)
	}
}

// Queued reads a channel's count from the runtime's header: a
// plain route's full-buffer check before the guard must see a channel with
// room as having room, whatever the element type, and count a drop only
// when the buffer is full.
func TestFullBufferCheckSeesTheRoomLeft(t *testing.T) {
	checkRoom(t, func(int) struct{} { return struct{}{} })
	checkRoom(t, func(i int) [3]int64 { return [3]int64{int64(i)} })
	checkRoom(t, func(i int) string { return strconv.Itoa(i) })
	checkRoom(t, func(i int) [200]byte { return [200]byte{byte(i)} })
	checkRoom(t, func(i int) *ifacePtr { return &ifacePtr{strconv.Itoa(i)} })
}

func checkRoom[T any](t *testing.T, mk func(int) T) {
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
