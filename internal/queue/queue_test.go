package queue

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestQueueMatchesItsModel runs random operations on queues of capacities
// 0 to 9 against a model, a slice of the values in order with the number
// the taker claimed, and checks every result.
func TestQueueMatchesItsModel(t *testing.T) {
	for c := range 10 {
		for seed := range uint64(20) {
			r := rand.New(rand.NewPCG(seed, uint64(c)))
			q := New[int](c)
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
						t.Fatalf("cap %d seed %d step %d: Put with %d queued, asleep %v: %v, want %v", c, seed, step, len(model), asleep, got, room)
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
						t.Fatalf("cap %d seed %d step %d: Take of %d queued: %d", c, seed, step, len(model), n)
					}
					if !slices.Equal(buf[:n], model[:n]) {
						t.Fatalf("cap %d seed %d step %d: Take: %v, want %v", c, seed, step, buf[:n], model[:n])
					}
					claimed = n
				case op == 3 && claimed > 0:
					q.Done(1)
					model = model[1:]
					claimed--
				case op == 4:
					v, ok := q.Evict()
					if want := len(model) > claimed; ok != want || ok && v != model[claimed] {
						t.Fatalf("cap %d seed %d step %d: Evict: %d, %v; model %v, %d claimed", c, seed, step, v, ok, model, claimed)
					}
					if ok {
						model = slices.Delete(model, claimed, claimed+1)
					}
				case op == 5 && claimed == 0:
					w := q.Sleep()
					if ready := len(model) > 0; (w == nil) != ready {
						t.Fatalf("cap %d seed %d step %d: Sleep with %d queued: %v", c, seed, step, len(model), w)
					}
					if w == nil {
						break
					}
					asleep = true
					if r.IntN(2) == 0 {
						q.Awake() // woken for something else
						asleep = false
					}
				}
				if q.Len() != len(model) {
					t.Fatalf("cap %d seed %d step %d: Len %d, want %d", c, seed, step, q.Len(), len(model))
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
	for _, evict := range []bool{false, true} {
		q := New[[2]int](5)
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
		buf := make([][2]int, 3)
		for finished := false; ; {
			n := q.Take(buf)
			for _, v := range buf[:n] {
				if v[1] <= last[v[0]] {
					t.Fatalf("putter %d: %d taken after %d", v[0], v[1], last[v[0]])
				}
				last[v[0]] = v[1]
				q.Done(1)
			}
			taken += n
			switch {
			case n > 0:
				continue
			case finished:
			default:
				// Wait for a value, or for the others to end; then take
				// what is left.
				if w := q.Sleep(); w != nil {
					select {
					case <-w:
						continue
					case <-done:
						q.Awake()
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
			t.Errorf("evict %v: %d taken and %d evicted of %d put", evict, taken, evicted.Load(), put.Load())
		}
		if q.Len() != 0 {
			t.Errorf("evict %v: Len %d after all was taken", evict, q.Len())
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
		q := New[int](c)
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
				if w := q.Sleep(); w != nil {
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
	q := New[int](0)
	if q.Put(1) {
		t.Fatal("Put succeeded with the taker awake")
	}
	w := q.Sleep()
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
	q := New[int](2)
	w := q.Sleep()
	if w == nil {
		t.Fatal("Sleep of an empty queue did not wait")
	}
	q.Close()
	<-w
	if !q.Closed() || q.Sleep() != nil {
		t.Fatal("after Close: want Closed, and Sleep not to wait")
	}
}

// TestQueueAllocatesNothing: Put, Take, Done and Evict allocate nothing.
func TestQueueAllocatesNothing(t *testing.T) {
	q := New[int](4)
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
