package compare_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic/compare"
)

// The reliability scenario: a counting subscriber and a stuck one on the same
// topic, reliabilityPublications publications, each phase bounded in time. A
// library whose publication or cleanup does not finish in time is reported
// as blocked, and its goroutines are abandoned where they wait; once the
// measurements are taken the stuck subscriber is released so that they can
// end.

// Time limits of the phases.
const (
	publishLimit = 5 * time.Second // for all publications
	cleanupLimit = 2 * time.Second // for Close
	settleLimit  = time.Second     // for goroutines to end after Close
	rescueLimit  = 2 * time.Second // for an abandoned run to end once released
)

// A reliability is what one library did in the reliability scenario.
type reliability struct {
	lib             string
	n               int    // publications attempted
	published       int64  // publications that returned within publishLimit
	finished        bool   // all of them did
	received        int64  // by the counting subscriber
	counted         int64  // its losses as the library counted them, -1 if it does not
	stuckGoroutines int    // goroutines more than before, with the stuck subscriber still there
	stuckHeap       int64  // heap bytes more than before, likewise
	closed          bool   // Close returned within cleanupLimit
	leftGoroutines  int    // goroutines more than before, after Close and a settling wait
	leftHeap        int64  // heap bytes more than before, likewise
	leftStacks      string // of this library's goroutines, if any was left
	rescued         bool   // the publications and Close ended once the stuck subscriber was released
}

// lost is what the counting subscriber missed of the publications made.
func (r reliability) lost() int64 { return r.published - r.received }

// TestReliability runs the scenario for every library and logs a table (go
// test -v). It asserts only this library's promises: publication finishes,
// the counting subscriber receives at least what its buffer holds, every
// loss is counted (published = received + the losses the broker counted
// itself, read from Subscriptions once the publications returned), and
// nothing is left behind. The other libraries' results are reported, not
// asserted; with -short (make race) they are not measured, as the ones
// that block take seconds to time out.
//
// Without -short, every library runs the scenario a second time, with ten
// times the publications, to show how what it holds grows.
func TestReliability(t *testing.T) {
	sizes := []int{reliabilityPublications}
	if !testing.Short() {
		sizes = append(sizes, 10*reliabilityPublications)
	}
	var rs []reliability
	for _, n := range sizes {
		rs = append(rs, reliabilityOf(t, n)...)
	}
	t.Logf("a counting and a stuck subscriber, capacity %d\n%s", compare.Capacity, table(rs))
	for _, r := range rs {
		if !r.rescued {
			t.Logf("%s, %d publications: goroutines still blocked %v after the stuck subscriber was released; abandoned", r.lib, r.n, rescueLimit)
		}
	}
}

// reliabilityOf measures every library (this one's alone with -short) in
// the scenario with n publications, and checks this library's promises.
func reliabilityOf(t *testing.T, n int) []reliability {
	var rs []reliability
	for _, lib := range compare.Libs {
		ours := strings.HasPrefix(lib.Name, "topic")
		if testing.Short() && !ours {
			continue
		}
		r := measure(lib, n)
		rs = append(rs, r)
		if !ours {
			continue
		}
		if lib.Lossless && (r.received != r.published || r.counted != 0) {
			t.Errorf("%s: received %d of %d publications, %d losses counted; want every one", lib.Name, r.received, r.published, r.counted)
		}
		if !r.finished {
			t.Errorf(lib.Name+": %d of %d publications returned within %v", r.published, n, publishLimit)
		}
		if low := min(compare.Capacity, r.published); r.received < low || r.received > r.published {
			t.Errorf(lib.Name+": counting subscriber received %d of %d publications, want at least %d, its buffer", r.received, r.published, low)
		}
		if r.received+r.counted != r.published {
			t.Errorf(lib.Name+": published %d ≠ received %d + counted losses %d", r.published, r.received, r.counted)
		}
		if r.stuckGoroutines > 1 {
			t.Errorf(lib.Name+": %d goroutines more with a stuck subscriber, want at most the counting subscriber's own", r.stuckGoroutines)
		}
		// Fewer goroutines than before is no leak: a goroutine of an earlier
		// test may end while the scenario runs.
		if !r.closed || r.leftGoroutines > 0 {
			t.Errorf(lib.Name+": closed %v, %d goroutines left after cancelling; this library's goroutines then:\n%s", r.closed, r.leftGoroutines, r.leftStacks)
		}
	}
	return rs
}

// measure runs the reliability scenario for lib in a goroutine of its own,
// so that a library that blocks blocks that goroutine only.
//
// This library's goroutines are counted by their stacks (see ours), so that
// a goroutine of another test or library ending meanwhile does not count;
// the others', which the test only reports, process-wide.
func measure(lib compare.Lib, n int) reliability {
	r := reliability{lib: lib.Name, n: n}
	// What an earlier run left for the collector, gone: a retained type's
	// log is kept until its clock's timer stops, 50 ms after the last
	// publication.
	time.Sleep(100 * time.Millisecond)
	goroutines, own := runtime.NumGoroutine, strings.HasPrefix(lib.Name, "topic")
	if own {
		goroutines = ours
	}
	baseGoroutines, baseHeap := goroutines(), liveHeap()

	bus := lib.New()
	c := compare.NewCounter(int64(n))
	bus.Subscribe(0, c)
	stuck := bus.SubscribeStuck(0)
	publish := bus.Publisher(0)
	published := make(chan struct{})
	var count atomic.Int64
	go func() {
		for range n {
			publish(value)
			count.Add(1)
		}
		close(published)
	}()
	r.finished = waitFor(published, publishLimit)
	r.published = count.Load()
	if r.finished && lib.Lossless {
		waitFor(c.Reached(), publishLimit)
	}
	time.Sleep(20 * time.Millisecond) // let goroutines handed a value start
	r.stuckGoroutines, r.stuckHeap = fewest(goroutines)-baseGoroutines, liveHeap()-baseHeap
	r.counted = -1
	if lc, ok := bus.(compare.LossCounter); ok && r.finished {
		r.counted = lc.CountedLosses() // final: losses are counted as publications return
	}

	closed := make(chan struct{})
	go func() {
		bus.Close()
		close(closed)
	}()
	r.closed = waitFor(closed, cleanupLimit)
	r.received = c.Load()
	settle(goroutines, baseGoroutines)
	r.leftGoroutines, r.leftHeap = fewest(goroutines)-baseGoroutines, liveHeap()-baseHeap
	if r.leftGoroutines > 0 && own {
		r.leftStacks = strings.Join(oursStacks(), "\n\n")
	}

	stuck.Release()
	r.rescued = waitFor(published, rescueLimit) && waitFor(closed, rescueLimit)
	settle(goroutines, baseGoroutines)
	return r
}

// waitFor reports whether ch is closed within d.
func waitFor(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// fewest returns the fewest goroutines of a few looks a millisecond apart: a
// timer's function (the log's clock tick) runs on a goroutine of its own
// for a moment, which one look may catch; a goroutine left behind is in
// every look.
func fewest(goroutines func() int) int {
	n := goroutines()
	for range 10 {
		time.Sleep(time.Millisecond)
		n = min(n, goroutines())
	}
	return n
}

// settle waits up to settleLimit for the goroutine count to fall to base.
func settle(goroutines func() int, base int) {
	for deadline := time.Now().Add(settleLimit); goroutines() > base && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

// ours counts the goroutines that run this library's code, or the
// adapter's (a subscriber's loop): those with such a frame on their stack.
func ours() int { return len(oursStacks()) }

// oursStacks returns the stacks of the goroutines ours counts.
func oursStacks() []string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var stacks []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, line := range strings.Split(g, "\n") {
			if strings.HasPrefix(line, "github.com/seedaa7df82c/topic.") || strings.HasPrefix(line, "github.com/seedaa7df82c/topic/compare.") {
				stacks = append(stacks, g)
				break
			}
		}
	}
	return stacks
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	runtime.GC() // twice: the first moves sync.Pool contents to a victim cache
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// table returns rs as a Markdown table.
func table(rs []reliability) string {
	var sb strings.Builder
	sb.WriteString("| lib | publications | publish | published | received | lost | goroutines while stuck | heap while stuck | close | goroutines left | heap left |\n")
	sb.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|\n")
	for _, r := range rs {
		lost := "-" // a value in flight in a blocked publication is neither
		if r.finished {
			lost = fmt.Sprint(r.lost())
		}
		fmt.Fprintf(&sb, "| %s | %d | %s | %d | %d | %s | %+d | %s | %s | %+d | %s |\n",
			r.lib, r.n, outcome(r.finished, "finished"), r.published, r.received, lost,
			r.stuckGoroutines, kib(r.stuckHeap), outcome(r.closed, "returned"), r.leftGoroutines, kib(r.leftHeap))
	}
	return sb.String()
}

func outcome(ok bool, yes string) string {
	if ok {
		return yes
	}
	return "BLOCKED"
}

func kib(n int64) string { return fmt.Sprintf("%+d KiB", n/1024) }
