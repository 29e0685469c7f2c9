package topic

// Tests of the guard's slots (see guard): a publisher takes the slot of
// its stripe with a compare-and-swap from an even value to the odd one
// after it, gives it back with a plain increment, and counts into the two
// sets of counters instead when its slot is held; a wait waits for every
// slot it finds odd to change, then flips the sets. Each test says what it
// attacks and which deliberately broken guards (mutants) it was seen to
// catch, of these:
//
//	M1  exit does not give the slot back
//	M2  wait skips the slot scan
//	M3  enter's compare-and-swap expects the value loaded, not n&^1
//	M5  exit gives back the slot of the stripe its stack is on by then
//	M6  wait waits for a slot to be even, not for it to change
//	M7  a section whose slot is held is not counted into its set (but out)
//	M7b a section whose slot is held is counted neither in nor out
//	M8  exit counts a set's section out of the current set, not its own
//	M9  wait stops scanning at the first odd slot
//	M11 race builds give the slot back with a plain increment (-race)
//	M12 enter takes the slot with a load and a separate addition
//
// (A wait that flips the sets once is caught by
// TestGuardWaitOutlastsAPublisherThatCountedInAfterAWholeWaitPassed,
// not here.)

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type slotInt int

// atDepth calls f at the bottom of n frames of its own, each with a small
// array on the stack, and returns a sum the compiler cannot drop: a
// publication made at a chosen depth, so that the goroutine's stack runs
// out (and is copied to a bigger one, at another address, so another
// stripe) at a chosen point of it.
//
//go:noinline
func atDepth(n int, f func()) int {
	var pad [48]byte
	pad[n%len(pad)] = byte(n)
	if n <= 0 {
		if f != nil {
			f()
		}
		return int(pad[0])
	}
	return atDepth(n-1, f) + int(pad[(n+1)%len(pad)])
}

// slotHolder is a goroutine inside a section of a guard, until released.
type slotHolder struct {
	c       section       // what its enter returned
	release chan struct{} // closed to let it exit
	done    chan struct{} // closed once it has exited
}

// holdSlots starts n goroutines that enter g at once and stay inside until
// released, and returns once every one has entered.
func holdSlots(g *guard, n int) []*slotHolder {
	hs := make([]*slotHolder, n)
	var entered sync.WaitGroup
	for k := range hs {
		h := &slotHolder{release: make(chan struct{}), done: make(chan struct{})}
		hs[k] = h
		entered.Add(1)
		go func() {
			defer close(h.done)
			h.c = g.enter()
			entered.Done()
			<-h.release
			g.exit(h.c)
		}()
	}
	entered.Wait()
	return hs
}

// Three times as many goroutines as stripes are inside the guard at once:
// by the pigeonhole principle at least two thirds of them found their slot
// held and counted into a set. No two may hold the same slot, every held
// slot must be odd and every odd slot held, and a wait must not return
// until the last of them has left, whether that one holds the
// highest-numbered slot held or counted into a set. Catches M3 (two
// holders of one slot, which the second turns even), M2 and M9 (the wait
// returns with the highest slot still held: M9 only if the wait scanned
// before the holders of lower slots left, which the test gives it 2 ms
// for; 20 of 20 runs), M7 and M7b (the sets do not count the sections
// inside them), M8 (the wait never returns), M1 (a slot stays odd once its
// holder exited) and, under -race, M11 (a data race).
func TestGuardSlotHoldersFillingEveryStripeAreEachWaitedFor(t *testing.T) {
	for _, lastOnSlot := range []bool{true, false} {
		t.Run(fmt.Sprintf("last on a slot %v", lastOnSlot), func(t *testing.T) {
			g := newGuard()
			hs := holdSlots(g, 3*guardStripes)
			released := false
			t.Cleanup(func() { // a failed test leaves no goroutine inside
				if !released {
					for _, h := range hs {
						close(h.release)
					}
				}
			})
			bySlot := map[section]*slotHolder{}
			var onSlots, inSets []*slotHolder
			for _, h := range hs {
				if h.c >= inSet {
					inSets = append(inSets, h)
					continue
				}
				if bySlot[h.c] != nil {
					t.Errorf("two sections inside at once hold slot %d", h.c)
				}
				bySlot[h.c] = h
				onSlots = append(onSlots, h)
			}
			for i := range g.own {
				n := atomic.LoadInt64(&g.own[i].n)
				if held := bySlot[section(i)] != nil; held != (n&1 == 1) {
					t.Errorf("slot %d is %d with a holder inside %v", i, n, held)
				}
			}
			var in int64
			for e := range 2 {
				i, o := guardSums(g, e)
				in += i - o
			}
			if in != int64(len(inSets)) || len(inSets) < 2*guardStripes || len(onSlots) == 0 {
				t.Fatalf("%d sections on slots, %d counted into sets, the sets count %d inside: want %d in the sets, at least %d",
					len(onSlots), len(inSets), in, len(inSets), 2*guardStripes)
			}
			var last *slotHolder
			if lastOnSlot {
				sort.Slice(onSlots, func(i, j int) bool { return onSlots[i].c < onSlots[j].c })
				last = onSlots[len(onSlots)-1] // the highest slot held: the last a scan reaches
			} else {
				last = inSets[len(inSets)/2]
			}
			returned := make(chan struct{})
			started := make(chan struct{})
			go func() {
				close(started)
				g.wait()
				close(returned)
			}()
			// Let the wait scan the slots before any holder leaves, so that
			// a wait that stops at the first odd slot stops at a low one.
			<-started
			time.Sleep(2 * time.Millisecond)
			for _, h := range hs {
				if h != last {
					close(h.release)
					<-h.done
					if h.c < inSet {
						if n := atomic.LoadInt64(&g.own[h.c].n); n&1 != 0 {
							t.Errorf("slot %d is %d once its holder exited: not given back", h.c, n)
						}
					}
				}
			}
			select {
			case <-returned:
				t.Errorf("a wait returned while a section (slot %d, or a set if %d) was still inside", last.c, inSet)
			case <-time.After(20 * time.Millisecond):
			}
			close(last.release)
			released = true
			<-last.done
			select {
			case <-returned:
			case <-time.After(10 * time.Second):
				t.Fatal("the wait did not return 10 s after the last section left")
			}
			checkDrained(t, g)
		})
	}
}

// A section whose goroutine's stack moves between enter and exit (it grew
// and was copied) must give back the slot it took, not the slot of the
// stripe its stack is on by then; a section within it, entered after the
// move, finds the new stripe's slot free and takes it, so that the
// goroutine holds two slots at once. Catches M5 (the slot taken stays odd,
// so every later wait hangs, and the other is given back twice) and M1.
func TestGuardExitGivesBackTheSlotItTookAfterTheStackMoved(t *testing.T) {
	g := newGuard()
	type result struct {
		outer, inner section
		after        [guardStripes]int64
	}
	res := make(chan result, 1)
	go func() {
		r := result{outer: g.enter(), inner: inSet}
		// Grow the stack (each growth copies it to a new one) until a
		// section within finds a slot free: its stack is then on another
		// stripe than when the outer section took its slot.
		for levels := 64; levels <= 1<<16; levels *= 2 {
			atDepth(levels, nil)
			c := g.enter()
			if c < inSet {
				r.inner = c
				break
			}
			g.exit(c) // still on the outer section's stripe
		}
		if r.inner < inSet {
			g.exit(r.inner)
		}
		g.exit(r.outer)
		for i := range g.own {
			r.after[i] = atomic.LoadInt64(&g.own[i].n)
		}
		res <- r
	}()
	r := <-res
	if r.outer >= inSet {
		t.Fatalf("the first section of a guard counted into set %d", r.outer-inSet)
	}
	if r.inner >= inSet {
		t.Fatal("the stack did not move to another stripe: the test tested nothing")
	}
	for i, n := range r.after {
		want := int64(0)
		if section(i) == r.outer || section(i) == r.inner {
			want = 2 // taken and given back once
		}
		if n != want {
			t.Errorf("slot %d is %d after the sections on slots %d and %d ended, want %d", i, n, r.outer, r.inner, want)
		}
	}
	if returned, _ := guardWaitReturns(g, 10*time.Second); !returned {
		t.Fatal("a wait did not return within 10 s once every section had ended")
	}
	checkDrained(t, g)
}

// A wait that found a slot held must return once that holder has left,
// though the slot is held again by then by another section: the wait must
// not be bounded by sections that began after it. The test plays the
// holders of one slot that take turns while the wait polls, each new one
// taking it between two of its polls (the slot goes from odd to the next
// odd value, its even value unseen), and never stops. Catches M6 (the
// wait never returns).
func TestGuardWaitReturnsOnceTheHolderLeftThoughTheSlotIsHeldAgain(t *testing.T) {
	g := newGuard()
	const i = guardStripes / 2
	atomic.StoreInt64(&g.own[i].n, 1) // held
	var stop atomic.Bool
	var turns sync.WaitGroup
	turns.Go(func() {
		for !stop.Load() {
			atomic.AddInt64(&g.own[i].n, 2) // given back and taken again
			runtime.Gosched()
		}
	})
	returned, _ := guardWaitReturns(g, 10*time.Second)
	stop.Store(true)
	turns.Wait()
	if !returned {
		t.Fatal("a wait did not return within 10 s while the slot it waited on kept being given back and taken again")
	}
	if n := atomic.LoadInt64(&g.own[i].n); n < 3 {
		t.Fatalf("the slot is %d: no holder left during the wait, the test tested nothing", n)
	}
}

// Publications made through the Broker, each from a goroutine of its own
// (a fresh stack of the smallest size) at a depth swept frame by frame, so
// that for some depths the stack runs out, and is copied elsewhere, inside
// the guard section (in the send, between enter and exit), and for others
// before or after it. Every section must give its slot back, every value
// must reach the subscription, and a cancel must then return and close the
// channel. Catches M5 through the Broker (a slot stays held after every
// publication returned: 8 of them in one run, so the sweep does move
// stacks inside sections; and the cancel hangs), and M1.
func TestPublicationsWhoseStackMovesInsideTheGuardGiveTheSlotBack(t *testing.T) {
	depths := 240 // beyond 16 KiB of frames: the sweep crosses three growths of the stack
	var b Broker
	ch, cancel := b.Subscribe(Buffer[slotInt](depths))
	g := b.table.Load().guard
	for d := range depths {
		done := make(chan struct{})
		go func() {
			defer close(done)
			atDepth(d, func() { b.Publish(slotInt(d)) })
		}()
		<-done
	}
	if ended, held := guardSlots(g); held != 0 || ended == 0 {
		t.Errorf("%d slots held, %d sections ended on slots, once every publication returned: want none held", held, ended)
	}
	returnsWithin(t, 10*time.Second, "cancel", cancel)
	got, closed := drainNow(ch)
	if len(got) != depths || !closed {
		t.Errorf("received %d values (closed %v), want %d and closed", len(got), closed, depths)
	}
	checkDrained(t, g)
}

// Three times as many publishers as stripes, publishing at depths that
// vary (so that stacks grow, some inside a section), race cancels of other
// subscriptions of the type and then Shutdown: many share a stripe, and
// take turns on its slot or count into a set. No publication may panic
// (a send on a channel a cancel or Shutdown closed), every cancelled
// channel must be closed once its cancel returns, and the steady
// subscription must account for every publication exactly once: received,
// or lost Full or Closed. Catches M1, M3, M5, M7 and M12 (a cancel or
// Shutdown hangs on a slot left odd, or on a set that never drains: M12 in
// 10 of 10 runs) and, under -race, M11. (M2 survives it: a publisher is
// rarely inside a section the moment a wait that skips the slots returns;
// TestGuardChannelLoadedOnASlotStaysOpenUntilTheSectionEnds catches
// it.)
func TestPublishersSharingGuardStripesAccountForEveryValue(t *testing.T) {
	d := 150 * time.Millisecond
	if testing.Short() {
		d = 60 * time.Millisecond
	}
	for round := 0; round < 2; round++ {
		var b Broker
		ch, _ := b.Subscribe(Buffer[slotInt](8))
		s := subOf(&b, ch)
		var received atomic.Int64
		consumed := make(chan struct{})
		go func() {
			defer close(consumed)
			for range ch {
				received.Add(1)
			}
		}()
		var published atomic.Int64
		var stop atomic.Bool
		t.Cleanup(func() { stop.Store(true) })
		panics := make(chan any, 4*guardStripes)
		var pubs sync.WaitGroup
		for p := range 3 * guardStripes {
			pubs.Go(func() {
				defer func() {
					if x := recover(); x != nil {
						panics <- x
					}
				}()
				n := int64(0)
				for i := p; !stop.Load(); i++ {
					atDepth(i%97, func() { b.Publish(slotInt(i)) })
					n++
					if i%64 == 0 {
						// Publishers that never yield keep a canceller,
						// which waits with Gosched, off the Ps for a
						// round of their time slices: up to a second
						// each, with this many (as before the slots).
						runtime.Gosched()
					}
				}
				published.Add(n)
			})
		}
		cancels := 0
		for start := time.Now(); cancels < 20 || time.Since(start) < d; cancels++ {
			c, cancel := b.Subscribe(Buffer[slotInt](cancels % 3))
			for range cancels % 4 {
				runtime.Gosched()
			}
			returnsWithin(t, 10*time.Second, "cancel", cancel)
			if _, closed := drainNow(c); !closed {
				t.Fatalf("round %d, cancel %d: the channel is open after its cancel returned", round, cancels)
			}
		}
		returnsWithin(t, 10*time.Second, "Shutdown", func() {
			if err := b.Shutdown(context.Background()); err != nil {
				t.Error(err)
			}
		})
		stop.Store(true)
		pubs.Wait()
		<-consumed
		close(panics)
		for x := range panics {
			t.Fatalf("round %d: a publication panicked: %v", round, x)
		}
		if err := unaccounted(published.Load(), received.Load(), s.stats().Lost); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		checkDrained(t, b.table.Load().guard)
		t.Logf("round %d: %d cancels, %d published", round, cancels, published.Load())
	}
}

// Three times as many goroutines as stripes enter and exit the guard in a
// loop, each marking the slot it holds as its own while inside: no two
// sections may hold one slot at once (a slot is exclusive while odd), and
// once they stop, every section must have been counted once, on a slot or
// in and out of a set. Catches M3 (a second goroutine of the stripe takes
// the held slot), M12 (two goroutines of a stripe that load it even at once
// both add: 20 of 20 runs on 2 Ps, none on 1, which has no two at once),
// M1, M7, M7b and, under -race, M11.
func TestGuardNoTwoSectionsHoldOneSlotAtOnce(t *testing.T) {
	d := 200 * time.Millisecond
	if testing.Short() {
		d = 80 * time.Millisecond
	}
	g := newGuard()
	var owner [guardStripes]atomic.Int64 // the goroutine inside on each slot, 0 if none
	var shared, sections atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for p := range 3 * guardStripes {
		id := int64(p + 1)
		wg.Go(func() {
			n := int64(0)
			for ; !stop.Load(); n++ {
				c := g.enter()
				if c < inSet {
					if !owner[c].CompareAndSwap(0, id) {
						shared.Add(1)
					}
					for range n % 8 {
						if owner[c].Load() != id {
							shared.Add(1)
						}
					}
					if p%4 == 0 && n%16 == 0 {
						// Held up inside, as a preempted publisher is: others
						// of its stripe find the slot held, even on one P.
						// (Only a few: the others' sections are short, so
						// that two of a stripe often take the slot at once.)
						runtime.Gosched()
					}
					owner[c].CompareAndSwap(id, 0)
				}
				g.exit(c)
				if n%64 == 0 {
					runtime.Gosched()
				}
			}
			sections.Add(n)
		})
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	if n := shared.Load(); n != 0 {
		t.Errorf("%d times a section found the slot it held held by another", n)
	}
	ended, held := guardSlots(g)
	var in, out int64
	for e := range 2 {
		i, o := guardSums(g, e)
		in, out = in+i, out+o
	}
	if want := sections.Load(); held != 0 || in != out || ended+in != want || ended == 0 || in == 0 {
		t.Errorf("%d sections ended on slots, %d held, %d counted in and %d out of the sets: want %d sections, on both, none held",
			ended, held, in, out, want)
	}
}

// The test plays a publisher inside the guard, on a slot, that has loaded
// the route and the channel of its only outlet (as sendOne does), while a
// cancel, or Shutdown, replaces the route and waits: neither may return,
// nor close the channel, until the publisher has sent on it and left. The
// value sent must then be received, and the channel closed. Catches M2
// (the cancel returns at once and the publisher's send panics: send on
// closed channel) and M1 (neither returns).
func TestGuardChannelLoadedOnASlotStaysOpenUntilTheSectionEnds(t *testing.T) {
	for _, viaShutdown := range []bool{false, true} {
		t.Run(fmt.Sprintf("Shutdown %v", viaShutdown), func(t *testing.T) {
			var b Broker
			ch, cancel := b.Subscribe(Buffer[slotInt](1))
			e, r := staleRoute[slotInt](t, &b)
			g := b.table.Load().guard
			enter, send := make(chan struct{}), make(chan struct{})
			type result struct {
				c      section
				panics any
			}
			res := make(chan result, 1)
			go func() { // the publisher
				var x result
				x.c = g.enter()
				out := r.direct[0].channel() // inside the guard, as sendOne loads it
				close(enter)
				<-send
				func() {
					defer func() { x.panics = recover() }()
					select {
					case out <- 7:
					default:
					}
				}()
				g.exit(x.c)
				res <- x
			}()
			<-enter
			done := make(chan struct{})
			go func() {
				defer close(done)
				if viaShutdown {
					if err := b.Shutdown(context.Background()); err != nil {
						t.Error(err)
					}
				} else {
					cancel()
				}
			}()
			waitUntil(t, "the route replaced", func() bool { return routeNow[slotInt](e) != r })
			select {
			case <-done:
				t.Error("it returned while a publisher that loaded the channel was inside the guard")
			case <-time.After(20 * time.Millisecond):
			}
			close(send)
			x := <-res
			if x.c >= inSet {
				t.Errorf("the publisher counted into a set (%d), not on a slot: the test tested the sets", x.c)
			}
			if x.panics != nil {
				t.Errorf("the publisher's send panicked: %v", x.panics)
			}
			returnsWithin(t, 10*time.Second, "the cancel or Shutdown once the publisher left", func() { <-done })
			got, closed := drainNow(ch)
			if fmt.Sprint(got) != "[7]" || !closed {
				t.Errorf("received %v (closed %v), want [7] and the channel closed", got, closed)
			}
		})
	}
}
