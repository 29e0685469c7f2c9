package topic

import (
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// parked returns how many contenders are parked on q.
func (q *seq) parked() int {
	p := q.park.Load()
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.parked
}

// waitParked waits until n contenders are parked on q.
func waitParked(t *testing.T, q *seq, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for q.parked() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d contenders parked, want %d", q.parked(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitDone waits for wg, failing if it takes longer than a lost wake-up
// could be mistaken for.
func waitDone(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: a parked contender was never woken", what)
	}
}

// TestSeqExcludesAndCountsEveryAppend appends from more goroutines than
// cores, so that some park: each append's plain read-modify-write of next
// and of a counter is exclusive (the race detector checks it), and the tail
// ends at the number of appends.
func TestSeqExcludesAndCountsEveryAppend(t *testing.T) {
	var q seq
	var plain int
	n, each := 4*runtime.GOMAXPROCS(0)+3, 2000
	if testing.Short() {
		each = 200
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for i := range each {
				q.Lock()
				if q.next != uint64(plain) {
					t.Errorf("next %d, want %d", q.next, plain)
				}
				plain++
				q.next++
				if i%64 == 0 {
					runtime.Gosched() // hold it across a yield: contenders park
				}
				q.Unlock()
			}
		})
	}
	waitDone(t, &wg, "appends")
	if got, want := q.tail(), uint64(n*each); got != want || plain != n*each {
		t.Fatalf("tail %d, counter %d, want %d", got, plain, want)
	}
	if w := q.w.Load(); w&(seqLocked|seqWaiting) != 0 {
		t.Fatalf("word %b after the last unlock, want neither bit", w&3)
	}
	if q.starving.Load() {
		t.Fatal("starving after the last contender took the lock")
	}
}

// TestSeqWakesEveryParkedContender parks contenders behind a holder, then
// lets go: each unlock wakes the next, none is forgotten.
func TestSeqWakesEveryParkedContender(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		var q seq
		q.Lock()
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				q.Lock()
				q.next++
				q.Unlock()
			})
		}
		waitParked(t, &q, n)
		if q.w.Load()&seqWaiting == 0 {
			t.Fatalf("n=%d: contenders parked without the waiting bit", n)
		}
		q.Unlock()
		waitDone(t, &wg, "after one unlock")
		if got := q.tail(); got != uint64(n) {
			t.Fatalf("n=%d: tail %d, want %d", n, got, n)
		}
	}
}

// TestSeqPublishKeepsTheLockAndTheWaitingBit publishes a tail while holding
// the lock with contenders parked: readers see the tail, the contenders stay
// parked, and the unlock after it still wakes them.
func TestSeqPublishKeepsTheLockAndTheWaitingBit(t *testing.T) {
	var q seq
	q.Lock()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			q.Lock()
			q.next++ // after the test's 9: ends at 12
			q.Unlock()
		})
	}
	waitParked(t, &q, 3)
	q.next = 7
	q.publish()
	if got := q.tail(); got != 7 {
		t.Fatalf("tail %d after publish, want 7", got)
	}
	if w := q.w.Load(); w&seqLocked == 0 || w&seqWaiting == 0 {
		t.Fatalf("publish left bits %b, want locked and waiting", w&3)
	}
	if got := q.parked(); got != 3 {
		t.Fatalf("%d parked after publish, want 3", got)
	}
	q.next = 9
	q.Unlock()
	waitDone(t, &wg, "after publish and unlock")
	if got := q.tail(); got != 12 {
		t.Fatalf("tail %d, want 12", got)
	}
}

// TestSeqReadersSeeOnlyWrittenValues: a reader that loads the tail finds
// every value below it written, while writers append under the lock.
func TestSeqReadersSeeOnlyWrittenValues(t *testing.T) {
	const size = 1 << 12
	var q seq
	var cells [size]uint64 // offset+1 once written; read below the tail only
	n := 2000
	if testing.Short() {
		n = 500
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for range n {
				q.Lock()
				if q.next < size {
					cells[q.next] = q.next + 1
					q.next++
				}
				q.Unlock()
			}
		})
	}
	stop := make(chan struct{})
	var rg sync.WaitGroup
	rg.Go(func() {
		for seen := uint64(0); ; {
			select {
			case <-stop:
				return
			default:
			}
			tail := q.tail()
			for o := seen; o < tail; o++ {
				if cells[o] != o+1 {
					t.Errorf("offset %d below tail %d reads %d", o, tail, cells[o])
					return
				}
			}
			seen = tail
		}
	})
	waitDone(t, &wg, "writers")
	close(stop)
	rg.Wait()
}

// TestSeqParksInsideAndOutsideSynctestBubbles: contenders park on one seq
// outside a testing/synctest bubble, then inside one, then outside again. A
// channel made in a bubble may not be used outside it (the runtime stops
// the process), so no parked contender's place may outlive its park.
func TestSeqParksInsideAndOutsideSynctestBubbles(t *testing.T) {
	var q seq
	contend := func(wait func()) {
		q.Lock()
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				q.Lock()
				q.next++
				q.Unlock()
			})
		}
		wait()
		q.Unlock()
		wg.Wait()
	}
	outside := func() { waitParked(t, &q, 3) }
	contend(outside)
	synctest.Test(t, func(t *testing.T) { contend(synctest.Wait) })
	contend(outside)
	if got := q.tail(); got != 9 {
		t.Fatalf("tail %d, want 9", got)
	}
}
