package queue

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestQueueMatchesItsModel runs random operations on queues of capacities
// 0 to 9, whose values leave OnDone or OnTake, against a model, a slice of
// the values in order with the number the taker claimed, and checks every
// result.
func TestQueueMatchesItsModel(t *testing.T) {
	for c, leave := range modelCases() {
		for seed := range uint64(20) {
			r := rand.New(rand.NewPCG(seed, uint64(c)))
			q := New[int](c, NewWaiter(), leave)
			var model []int // put, neither handed out nor evicted
			claimed := 0    // of model, at its start, taken and not handed out
			asleep := false
			next := 0
			buf := make([]int, 4)
			for step := range 400 {
				switch op := r.IntN(6); {
				case op <= 1:
					room := len(model) < c || c == 0 && asleep && len(model) == 0
					if got := q.Put(next); got != room {
						t.Fatalf("cap %d %v seed %d step %d: Put with %d queued, asleep %v: %v, want %v", c, leave, seed, step, len(model), asleep, got, room)
					}
					if room {
						model = append(model, next)
						asleep = false // the put woke the taker
					}
					next++
				case op == 2:
					if claimed > 0 {
						break // the taker hands out what it took first
					}
					n := q.Take(buf[:1+r.IntN(len(buf))])
					want := min(len(model), len(buf))
					if n > want || n < min(len(model), 1) {
						t.Fatalf("cap %d %v seed %d step %d: Take of %d queued: %d", c, leave, seed, step, len(model), n)
					}
					if !slices.Equal(buf[:n], model[:n]) {
						t.Fatalf("cap %d %v seed %d step %d: Take: %v, want %v", c, leave, seed, step, buf[:n], model[:n])
					}
					claimed = n
					if leave == OnTake {
						model, claimed = model[n:], 0
					}
				case op == 3 && claimed > 0:
					q.Done(1)
					model = model[1:]
					claimed--
				case op == 4:
					v, ok := q.Evict()
					if want := len(model) > claimed; ok != want || ok && v != model[claimed] {
						t.Fatalf("cap %d %v seed %d step %d: Evict: %d, %v; model %v, %d claimed", c, leave, seed, step, v, ok, model, claimed)
					}
					if ok {
						model = slices.Delete(model, claimed, claimed+1)
					}
				case op == 5 && claimed == 0:
					w := sleep(q)
					if ready := len(model) > 0; (w == nil) != ready {
						t.Fatalf("cap %d %v seed %d step %d: Sleep with %d queued: %v", c, leave, seed, step, len(model), w)
					}
					if w == nil {
						break
					}
					asleep = true
					if r.IntN(2) == 0 {
						q.w.Awake() // woken for something else
						asleep = false
					}
				}
				if q.Len() != len(model) {
					t.Fatalf("cap %d %v seed %d step %d: Len %d, want %d", c, leave, seed, step, q.Len(), len(model))
				}
			}
		}
	}
}

// TestQueueKeepsEachPuttersOrder has putters put at once into a small
// queue, while the taker takes batches and a third goroutine evicts: every
// value put is taken or evicted once, and the taker sees each putter's
// values in the order they were put.
func TestQueueKeepsEachPuttersOrder(t *testing.T) {
	const putters, each = 3, 20000
	for _, c := range []struct {
		cap   int
		leave Leave
		evict bool
	}{{5, OnDone, false}, {5, OnDone, true}, {1, OnTake, false}, {1, OnTake, true}, {2, OnTake, true}} {
		evict := c.evict
		q := New[[2]int](c.cap, NewWaiter(), c.leave)
		buf := make([][2]int, 3)
		if c.leave == OnTake {
			buf = buf[:1]
		}
		var putting, all sync.WaitGroup
		var put, evicted atomic.Int64
		for p := range putters {
			putting.Go(func() {
				for i := range each {
					if q.Put([2]int{p, i}) {
						put.Add(1)
					}
				}
			})
		}
		putDone := make(chan struct{})
		all.Go(func() {
			putting.Wait()
			close(putDone)
		})
		if evict {
			all.Go(func() {
				for {
					select {
					case <-putDone:
						return
					default:
					}
					if _, ok := q.Evict(); ok {
						evicted.Add(1)
					}
				}
			})
		}
		done := make(chan struct{})
		go func() {
			all.Wait()
			close(done)
		}()
		last := [putters]int{-1, -1, -1}
		taken := 0
		for finished := false; ; {
			n := q.Take(buf)
			for _, v := range buf[:n] {
				if v[1] <= last[v[0]] {
					t.Fatalf("putter %d: %d taken after %d", v[0], v[1], last[v[0]])
				}
				last[v[0]] = v[1]
				if c.leave == OnDone {
					q.Done(1)
				}
			}
			taken += n
			switch {
			case n > 0:
				continue
			case finished:
			default:
				// Wait for a value, or for the others to end; then take
				// what is left.
				if w := sleep(q); w != nil {
					select {
					case <-w:
						continue
					case <-done:
						q.w.Awake()
					}
				}
				select {
				case <-done:
					finished = true
				default:
				}
				continue
			}
			break
		}
		if got := int64(taken) + evicted.Load(); got != put.Load() {
			t.Errorf("%+v: %d taken and %d evicted of %d put", c, taken, evicted.Load(), put.Load())
		}
		if q.Len() != 0 {
			t.Errorf("%+v: Len %d after all was taken", c, q.Len())
		}
	}
}

// TestQueueWakesASleepingTaker hands values one at a time to a taker that
// sleeps before each: a lost wake-up would leave it asleep with a value
// queued, which the test reports after a minute rather than hang.
func TestQueueWakesASleepingTaker(t *testing.T) {
	rounds := 20000
	if testing.Short() {
		rounds = 2000
	}
	for _, c := range []int{0, 1, 7} {
		q := New[int](c, NewWaiter(), OnDone)
		acks := make(chan int)
		go func() {
			buf := make([]int, 1)
			for {
				if q.Take(buf) == 1 {
					q.Done(1)
					acks <- buf[0]
					continue
				}
				if q.Closed() {
					close(acks)
					return
				}
				if w := sleep(q); w != nil {
					<-w
				}
			}
		}()
		for i := range rounds {
			for !q.Put(i) {
				// Unbuffered: wait until the taker sleeps.
				time.Sleep(time.Microsecond)
			}
			select {
			case v := <-acks:
				if v != i {
					t.Fatalf("cap %d: took %d, want %d", c, v, i)
				}
			case <-time.After(time.Minute):
				t.Fatalf("cap %d: round %d: the taker slept with a value queued (Len %d)", c, i, q.Len())
			}
		}
		q.Close()
		if _, ok := <-acks; ok {
			t.Fatalf("cap %d: a value taken after the last", c)
		}
	}
}

// TestAnUnbufferedQueueTakesOnlyWhatItsTakerWaitsFor: a Put to a queue of
// capacity 0 fails unless the taker sleeps with nothing queued, and then
// only one succeeds.
func TestAnUnbufferedQueueTakesOnlyWhatItsTakerWaitsFor(t *testing.T) {
	q := New[int](0, NewWaiter(), OnDone)
	if q.Put(1) {
		t.Fatal("Put succeeded with the taker awake")
	}
	w := sleep(q)
	if w == nil {
		t.Fatal("Sleep of an empty queue did not wait")
	}
	if !q.Put(2) || q.Put(3) {
		t.Fatal("want the first Put to a waiting taker to succeed, and the second to fail")
	}
	<-w
	buf := make([]int, 4)
	if n := q.Take(buf); n != 1 || buf[0] != 2 {
		t.Fatalf("Take: %v", buf[:n])
	}
	q.Done(1)
	if q.Put(4) {
		t.Fatal("Put succeeded with the taker awake")
	}
}

// TestCloseWakesASleepingTaker: Close wakes the taker, whose next Sleep
// does not wait.
func TestCloseWakesASleepingTaker(t *testing.T) {
	q := New[int](2, NewWaiter(), OnDone)
	w := sleep(q)
	if w == nil {
		t.Fatal("Sleep of an empty queue did not wait")
	}
	q.Close()
	<-w
	if !q.Closed() || sleep(q) != nil {
		t.Fatal("after Close: want Closed, and Sleep not to wait")
	}
}

// TestQueueAllocatesNothing: Put, Take, Done and Evict allocate nothing.
func TestQueueAllocatesNothing(t *testing.T) {
	q := New[int](4, NewWaiter(), OnDone)
	buf := make([]int, 4)
	if n := testing.AllocsPerRun(100, func() {
		q.Put(1)
		q.Put(2)
		q.Evict()
		q.Done(q.Take(buf))
	}); n != 0 {
		t.Errorf("%v allocations a round, want 0", n)
	}
}

// modelCases yields the capacities 0 to 9, each with both Leaves.
func modelCases() func(yield func(int, Leave) bool) {
	return func(yield func(int, Leave) bool) {
		for c := range 10 {
			for _, l := range []Leave{OnDone, OnTake} {
				if !yield(c, l) {
					return
				}
			}
		}
	}
}

// sleep is the taker's wait on the one queue q: nil if q is ready, else the
// channel to wait on (see Waiter.Sleep).
func sleep[T any](q *Queue[T]) <-chan struct{} {
	q.w.Sleep()
	if q.Ready() {
		q.w.Awake()
		return nil
	}
	return q.w.C()
}

// TestPutNeverFailsBelowItsCapacity: putters that together never put more
// than the capacity, beside a taker that hands out as it takes, never see a
// Put fail, though the taker's count of values handed out may pass the tail
// a putter loaded.
func TestPutNeverFailsBelowItsCapacity(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	const capacity, putters = 64, 7
	rounds := 3000
	if testing.Short() {
		rounds = 300
	}
	for round := range rounds {
		q := New[int](capacity, NewWaiter(), OnDone)
		var wg sync.WaitGroup
		var failed atomic.Int64
		var stop atomic.Bool
		taker := make(chan struct{})
		go func() {
			defer close(taker)
			buf := make([]int, 4)
			for !stop.Load() || q.Len() > 0 {
				q.Done(q.Take(buf))
			}
		}()
		for range putters {
			wg.Go(func() {
				for i := range capacity / putters {
					if !q.Put(i) {
						failed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		stop.Store(true)
		<-taker
		if n := failed.Load(); n > 0 {
			t.Fatalf("round %d: %d Puts failed on a queue of capacity %d that never held more than %d", round, n, capacity, capacity/putters*putters)
		}
	}
}

// TestQueuesSharingAWaiterTakeOneValueUnbuffered: two unbuffered queues of
// one taker (a handler's queue and its re-drive queue) accept one value
// between them while it waits, and the next only once it has handed that
// one out and waits again.
func TestQueuesSharingAWaiterTakeOneValueUnbuffered(t *testing.T) {
	w := NewWaiter()
	q, rd := New[int](0, w, OnDone), New[int](0, w, OnDone)
	w.Sleep()
	if q.Ready() || rd.Ready() {
		t.Fatal("ready before any Put")
	}
	if !q.Put(1) {
		t.Fatal("Put to a waiting taker failed")
	}
	if rd.Put(2) || q.Put(3) {
		t.Fatal("a second value accepted by a taker that waits for one")
	}
	<-w.C()
	buf := make([]int, 1)
	if q.Take(buf) != 1 || buf[0] != 1 {
		t.Fatalf("took %v", buf)
	}
	if rd.Put(4) {
		t.Fatal("Put accepted with the taker's value not handed out")
	}
	q.Done(1)
	if rd.Put(5) {
		t.Fatal("Put accepted with the taker awake")
	}
	w.Sleep()
	if !rd.Put(6) {
		t.Fatal("Put to a taker waiting again failed")
	}
}
