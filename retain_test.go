package topic_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

type (
	// retainSeq is the N-th value of publisher P: unique, so that a value
	// received on a plain subscription can be mapped back to its offset.
	retainSeq struct{ P, N int }
	// retainTick is a retained type for the sequential tests.
	retainTick struct{ N int }
	// retainNamed is a retained type that implements fmt.Stringer.
	retainNamed struct{ N int }
	// retainOther is a type that is never retained.
	retainOther struct{ P, N int }
)

func (n retainNamed) String() string { return fmt.Sprintf("named %d", n.N) }

// retainScale returns n, or a tenth of it (at least one) with -short.
func retainScale(n int) int {
	if testing.Short() {
		return max(n/10, 1)
	}
	return n
}

// retainNested returns a function for a nested publication: given n >= 0,
// it publishes retainTick{-1 - n} on b (appends it, if viaAppend) and adds
// the message of a panic, if any, to panics; given n < 0, it does nothing.
func retainNested(b *topic.Broker, viaAppend bool, panics *[]string) func(int) {
	return func(n int) {
		if n < 0 {
			return
		}
		if msg, ok := panicMessage(func() {
			if viaAppend {
				b.Append(retainTick{-1 - n})
			} else {
				b.Publish(retainTick{-1 - n})
			}
		}); ok {
			*panics = append(*panics, msg)
		}
	}
}

// retainWantPanic checks that f panics with a "topic: " message.
func retainWantPanic(t *testing.T, what string, f func()) {
	t.Helper()
	msg, ok := panicMessage(f)
	switch {
	case !ok:
		t.Errorf("%s did not panic", what)
	case !strings.HasPrefix(msg, "topic: "):
		t.Errorf("%s panicked with %q, want a \"topic: \" message", what, msg)
	}
}

// retainTake receives what is queued on ch, without waiting.
func retainTake[T any](ch <-chan T) []T {
	var vs []T
	for {
		select {
		case v, ok := <-ch:
			if !ok {
				return vs
			}
			vs = append(vs, v)
		default:
			return vs
		}
	}
}

// retainOffsets returns the offsets of rs.
func retainOffsets[T any](rs []topic.Record[T]) []uint64 {
	os := make([]uint64, len(rs))
	for i, r := range rs {
		os[i] = r.Offset
	}
	return os
}

// retainRange returns the offsets from lo to hi, hi excluded.
func retainRange(lo, hi uint64) []uint64 {
	var os []uint64
	for o := lo; o < hi; o++ {
		os = append(os, o)
	}
	return os
}

// retainTicks returns the ticks numbered ns.
func retainTicks(ns ...uint64) []retainTick {
	var ts []retainTick
	for _, n := range ns {
		ts = append(ts, retainTick{int(n)})
	}
	return ts
}

// retainLost returns the counts of the subscription named name.
func retainLost(t *testing.T, b *topic.Broker, name string) topic.Lost {
	t.Helper()
	for _, s := range b.Subscriptions() {
		if s.Name == name {
			return s.Lost
		}
	}
	t.Fatalf("no subscription named %q", name)
	return topic.Lost{}
}

// retainWithin runs f, failing the test if it has not returned within ten
// seconds: a deadlock.
func retainWithin(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("deadlock: the publication never returned")
	}
}

// retainProbe is one subscription of the gap and duplicate test.
type retainProbe struct {
	name   string
	start  string // Last, At, Earliest or Next
	n      int    // Last's n, At's offset
	record bool   // a subscription to Record[retainSeq], else to retainSeq
	// filtered is set for a subscription to retainSeq whose own type is
	// decided by a From function (passing every value): it receives the
	// backlog in order, then the live values without a gap or a duplicate,
	// but in offset order only if publications do not overlap.
	filtered bool
	policy   topic.Policy
	// before and after are the publications completed when Subscribe was
	// called and when it returned: the offset the replay saw as next is in
	// [before, after+publishers].
	before, after int
	recs          <-chan topic.Record[retainSeq]
	vals          <-chan retainSeq
	cancel        func()
}

// Subscriptions made with replay while several publishers run receive, each,
// every offset from where they start to the end, exactly once, in offset
// order, and all of them the same value at each offset: the one a pull read
// finds there, and the one its publisher was told it got. (Those whose own
// type goes through a From filter get every offset exactly once too, in an
// order the test does not check.)
//
// It runs twice: keeping every value, and keeping 1000, so that the ring
// wraps while backlogs are replayed.
func TestReplayWhilePublishingHasNoGapNoDuplicateAndOneOrder(t *testing.T) {
	t.Run("keeping all", func(t *testing.T) { retainNoGap(t, 0) })
	t.Run("keeping 1000", func(t *testing.T) { retainNoGap(t, 1000) })
}

// retainNoGap is TestReplayWhilePublishingHasNoGapNoDuplicateAndOneOrder
// with a retention of keep values, every value if keep is 0.
func retainNoGap(t *testing.T, keep int) {
	const publishers = 4
	per := retainScale(5000)
	total := publishers * per
	if keep == 0 {
		keep = total
	}
	nsubs := max(retainScale(48), 32) // every kind of subscription, even with -short
	seed := rand.Uint64()
	t.Logf("seed %d", seed)

	var b topic.Broker
	b.Retain[retainSeq](topic.Retention{Count: keep})
	// ref sees every publication: it is subscribed before the first.
	ref, cancelRef := b.Subscribe(topic.Buffer[topic.Record[retainSeq]](total))
	defer cancelRef()
	// A From function that yields, run on each publication after the
	// sequencing point, lets publishers overtake one another there: what
	// must keep offset order must not be sent there.
	_, cancelYield := b.Subscribe(topic.From(func(retainSeq) (retainOther, bool) {
		runtime.Gosched()
		return retainOther{}, false
	}))
	defer cancelYield()

	var (
		published atomic.Int64 // publications completed
		start     = make(chan struct{})
		wg        sync.WaitGroup
		appended  = make([][]uint64, publishers) // offsets Append returned
		onLoss    atomic.Int64                   // calls of the OnLoss hooks
		probes    = make([]*retainProbe, nsubs)
	)
	for p := range publishers {
		wg.Go(func() {
			<-start
			for n := range per {
				v := retainSeq{p, n}
				if p%2 == 0 {
					b.Publish(v)
				} else {
					o, ok := b.Append(v)
					if !ok {
						t.Errorf("Append of a retained type returned false")
					}
					appended[p] = append(appended[p], o)
				}
				published.Add(1)
			}
		})
	}
	// Two goroutines subscribe at random moments of the publication, each
	// waiting for a random number of publications to be done.
	const creators = 2
	for c := range creators {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			<-start
			var at []int
			for range (nsubs + creators - 1 - c) / creators {
				at = append(at, rng.IntN(total*9/10))
			}
			slices.Sort(at)
			for k, threshold := range at {
				i := c + k*creators
				for published.Load() < int64(threshold) {
					runtime.Gosched()
				}
				probes[i] = retainSubscribe(&b, rng, i, total, &published, &onLoss)
			}
		})
	}
	close(start)
	wg.Wait()

	// Every publication is done and every backlog was queued before its
	// Subscribe returned: what each subscription got is in its channel.
	refRecs := retainTake(ref)
	if len(refRecs) != total {
		t.Fatalf("the first subscription received %d records, want %d", len(refRecs), total)
	}
	valueAt := make([]retainSeq, total)
	offsetOf := make(map[retainSeq]uint64, total)
	nextN := make([]int, publishers)
	for i, r := range refRecs {
		if r.Offset != uint64(i) {
			t.Fatalf("record %d has offset %d: offsets are not consecutive from 0", i, r.Offset)
		}
		if r.Value.N != nextN[r.Value.P] {
			t.Fatalf("offset %d holds %+v, want N=%d: a publisher's values are out of order", i, r.Value, nextN[r.Value.P])
		}
		nextN[r.Value.P]++
		valueAt[i] = r.Value
		offsetOf[r.Value] = r.Offset
	}

	// A pull read finds the last keep offsets, the others skipped.
	kept := min(keep, total)
	recs, next, skipped := b.Read[retainSeq](0, total+10)
	if len(recs) != kept || next != uint64(total) || skipped != uint64(total-kept) {
		t.Fatalf("Read(0) = %d records, next %d, skipped %d; want %d, %d, %d", len(recs), next, skipped, kept, total, total-kept)
	}
	for i, r := range recs {
		o := total - kept + i
		if r.Offset != uint64(o) || r.Value != valueAt[o] || !r.Time.Equal(refRecs[o].Time) {
			t.Fatalf("Read: record %d is %+v, the subscription got %+v", o, r, refRecs[o])
		}
	}
	// Append told each publisher the offset its value got.
	for p, os := range appended {
		for n, o := range os {
			if want := offsetOf[retainSeq{p, n}]; o != want {
				t.Fatalf("Append of {%d %d} returned offset %d; the value is at %d", p, n, o, want)
			}
		}
	}

	var (
		byStart               = map[string]int{}
		nrecord, nvalue, nold int
		nfiltered             int
		during                int // made while publishers ran
		replayed, received    int // values below before, and all values
		maxBacklog            int
	)
	for _, pr := range probes {
		if lost := retainLost(t, &b, pr.name); lost.Total() != 0 {
			t.Errorf("%s lost %+v with a buffer for every value", pr.name, lost)
		}
		var got []uint64
		if pr.record {
			nrecord++
			for _, r := range retainTake(pr.recs) {
				if r.Offset >= uint64(total) || r.Value != valueAt[r.Offset] {
					t.Fatalf("%s: offset %d holds %+v, want %+v", pr.name, r.Offset, r.Value, valueAt[min(r.Offset, uint64(total-1))])
				}
				got = append(got, r.Offset)
			}
		} else {
			nvalue++
			for _, v := range retainTake(pr.vals) {
				o, ok := offsetOf[v]
				if !ok {
					t.Fatalf("%s received %+v, which was never published", pr.name, v)
				}
				got = append(got, o)
			}
		}
		pr.cancel()
		byStart[pr.start]++
		if pr.policy == topic.DropOldest {
			nold++
		}
		if pr.filtered {
			nfiltered++
		}
		if pr.before > 0 && pr.after < total {
			during++
		}
		received += len(got)
		retainCheckProbe(t, pr, got, total, publishers, keep)
		for _, o := range got {
			if o < uint64(pr.before) {
				replayed++
			}
		}
		maxBacklog = max(maxBacklog, pr.before-int(retainFirstOr(got, uint64(pr.before))))
	}
	if n := onLoss.Load(); n != 0 {
		t.Errorf("OnLoss was called %d times; nothing was lost", n)
	}
	if during == 0 {
		t.Errorf("no subscription was made while the publishers ran")
	}
	t.Logf("%d publishers × %d values = %d (half by Publish, half by Append), %d kept, %d subscriptions "+
		"made at random moments (%d while publishers ran; %d Record, %d value of which %d through a From filter, %d drop-oldest with OnLoss; "+
		"Last %d, At %d, Earliest %d, Next %d) besides one from the start; "+
		"%d values received, at least %d of them replayed, largest backlog at least %d",
		publishers, per, total, kept, nsubs, during, nrecord, nvalue, nfiltered, nold,
		byStart["Last"], byStart["At"], byStart["Earliest"], byStart["Next"],
		received, replayed, maxBacklog)
}

// retainFirstOr returns the first of os, or def if there is none.
func retainFirstOr(os []uint64, def uint64) uint64 {
	if len(os) == 0 {
		return def
	}
	return os[0]
}

// retainSubscribe makes the i-th subscription of the gap and duplicate test,
// its kind chosen by i and its start by rng.
func retainSubscribe(b *topic.Broker, rng *rand.Rand, i, total int, published, onLoss *atomic.Int64) *retainProbe {
	pr := &retainProbe{name: fmt.Sprintf("probe %d", i), record: i%2 == 0}
	var s topic.Start
	switch i / 2 % 4 {
	case 0:
		pr.start, pr.n = "Last", 1+rng.IntN(total/4)
		s = topic.Last(pr.n)
	case 1:
		// Mostly an offset already given, sometimes one not yet given.
		pr.start, pr.n = "At", rng.IntN(int(published.Load())+200)
		s = topic.At(uint64(pr.n))
	case 2:
		pr.start = "Earliest"
		s = topic.Earliest()
	case 3:
		pr.start = "Next"
		s = topic.Next()
	}
	if i/8%2 == 1 {
		pr.policy = topic.DropOldest // delivered outside the guard, like From sources
	}
	pr.before = int(published.Load())
	if pr.record {
		type R = topic.Record[retainSeq]
		pr.recs, pr.cancel = b.Subscribe(topic.Name[R](pr.name), topic.Buffer[R](total),
			topic.Replay[R](s), topic.Overflow[R](pr.policy),
			topic.OnLoss(func(topic.Loss[R]) { onLoss.Add(1) }))
	} else {
		opts := []topic.Option[retainSeq]{topic.Name[retainSeq](pr.name), topic.Buffer[retainSeq](total),
			topic.Replay[retainSeq](s), topic.Overflow[retainSeq](pr.policy),
			topic.OnLoss(func(topic.Loss[retainSeq]) { onLoss.Add(1) })}
		if pr.filtered = i/16%2 == 1; pr.filtered {
			opts = append(opts, topic.From(func(v retainSeq) (retainSeq, bool) { return v, true }))
		}
		pr.vals, pr.cancel = b.Subscribe(opts...)
	}
	pr.after = int(published.Load())
	return pr
}

// retainCheckProbe checks the offsets a probe received: consecutive, to
// the last one published, from where its start says.
func retainCheckProbe(t *testing.T, pr *retainProbe, got []uint64, total, publishers, keep int) {
	t.Helper()
	if pr.filtered {
		got = slices.Sorted(slices.Values(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			kind := "gap"
			if got[i] <= got[i-1] {
				kind = "duplicate or reordering"
			}
			t.Errorf("%s (%s %d, made after %d publications): %s: offset %d follows %d",
				pr.name, pr.start, pr.n, pr.before, kind, got[i], got[i-1])
			return
		}
	}
	// The next offset at the replay was in [lo, hi], and the head keep
	// below it, or 0.
	lo, hi := pr.before, pr.after+publishers
	if len(got) == 0 {
		switch {
		case pr.start == "Earliest", pr.start == "Last" && lo > 0, pr.start == "At" && pr.n < lo:
			t.Errorf("%s (%s %d, made after %d publications) received nothing", pr.name, pr.start, pr.n, pr.before)
		}
		return
	}
	if last := got[len(got)-1]; last != uint64(total-1) {
		t.Errorf("%s: the last offset received is %d, want %d", pr.name, last, total-1)
	}
	first := int(got[0])
	var from, to int // first is in [from, to]
	switch pr.start {
	case "Earliest":
		from, to = max(lo-keep, 0), max(hi-keep, 0)
	case "At":
		if pr.n < lo {
			from, to = max(pr.n, lo-keep), max(pr.n, hi-keep)
		} else {
			from, to = lo, max(pr.n, hi-keep)
		}
	case "Last":
		n := min(pr.n, keep)
		from, to = max(lo-n, 0), max(hi-n, 0)
	case "Next":
		from, to = lo, hi
	}
	ok := from <= first && first <= to
	if !ok {
		t.Errorf("%s (%s %d, made after %d..%d publications) starts at offset %d, want %d to %d", pr.name, pr.start, pr.n, pr.before, pr.after, first, from, to)
	}
}

// Each way to start replays what it says from what is kept, then the live
// values, for subscriptions of the type and of its Record.
func TestReplayStartsWhereAsked(t *testing.T) {
	// Count 5 and 8 publications: offsets 3 to 7 are kept.
	tests := []struct {
		name  string
		start []topic.Start
		want  []uint64 // the replayed offsets
	}{
		{"Next", []topic.Start{topic.Next()}, nil},
		{"no Replay", nil, nil},
		{"Last(0)", []topic.Start{topic.Last(0)}, nil},
		{"Last(-1)", []topic.Start{topic.Last(-1)}, nil},
		{"Last(1)", []topic.Start{topic.Last(1)}, retainRange(7, 8)},
		{"Last(3)", []topic.Start{topic.Last(3)}, retainRange(5, 8)},
		{"Last(5)", []topic.Start{topic.Last(5)}, retainRange(3, 8)},
		{"Last(6)", []topic.Start{topic.Last(6)}, retainRange(3, 8)},
		{"Last(1000)", []topic.Start{topic.Last(1000)}, retainRange(3, 8)},
		{"At(0) below the head", []topic.Start{topic.At(0)}, retainRange(3, 8)},
		{"At(2) below the head", []topic.Start{topic.At(2)}, retainRange(3, 8)},
		{"At(3) the head", []topic.Start{topic.At(3)}, retainRange(3, 8)},
		{"At(6)", []topic.Start{topic.At(6)}, retainRange(6, 8)},
		{"At(7) the last", []topic.Start{topic.At(7)}, retainRange(7, 8)},
		{"At(8) the next", []topic.Start{topic.At(8)}, nil},
		{"At(100) the future", []topic.Start{topic.At(100)}, nil},
		{"At(MaxUint64)", []topic.Start{topic.At(^uint64(0))}, nil},
		{"Earliest", []topic.Start{topic.Earliest()}, retainRange(3, 8)},
		{"the last Replay wins", []topic.Start{topic.Earliest(), topic.Last(1)}, retainRange(7, 8)},
		{"the last Replay wins, Next", []topic.Start{topic.Earliest(), topic.Next()}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b topic.Broker
			b.Retain[retainTick](topic.Retention{Count: 5})
			for n := range 8 {
				b.Publish(retainTick{n})
			}
			var vopts []topic.Option[retainTick]
			var ropts []topic.Option[topic.Record[retainTick]]
			for _, s := range tt.start {
				vopts = append(vopts, topic.Replay[retainTick](s))
				ropts = append(ropts, topic.Replay[topic.Record[retainTick]](s))
			}
			vals, cancelV := b.Subscribe(append(vopts, topic.Buffer[retainTick](16))...)
			defer cancelV()
			recs, cancelR := b.Subscribe(append(ropts, topic.Buffer[topic.Record[retainTick]](16))...)
			defer cancelR()
			if got := retainTake(vals); !slices.Equal(got, retainTicks(tt.want...)) {
				t.Errorf("values replayed: %v, want %v", got, retainTicks(tt.want...))
			}
			rs := retainTake(recs)
			if got := retainOffsets(rs); !slices.Equal(got, tt.want) {
				t.Errorf("offsets replayed: %v, want %v", got, tt.want)
			}
			for _, r := range rs {
				if r.Value.N != int(r.Offset) {
					t.Errorf("record %d holds %v", r.Offset, r.Value)
				}
			}
			// Then the live values, after the backlog.
			b.Publish(retainTick{8})
			if got := retainTake(vals); !slices.Equal(got, retainTicks(8)) {
				t.Errorf("live values: %v, want [{8}]", got)
			}
			if got := retainOffsets(retainTake(recs)); !slices.Equal(got, []uint64{8}) {
				t.Errorf("live offsets: %v, want [8]", got)
			}
		})
	}
}

// A last-value subscription (Count 1, Last(1)) receives the current value
// as it subscribes, then every new one; with nothing published yet, nothing.
func TestLastValueSubscriptionGetsTheCurrentValue(t *testing.T) {
	var b topic.Broker
	b.Retain[retainTick](topic.Retention{Count: 1})
	empty, cancel := b.Subscribe(topic.Replay[retainTick](topic.Last(1)))
	if got := retainTake(empty); len(got) != 0 {
		t.Errorf("with nothing published, received %v", got)
	}
	cancel()
	for n := range 3 {
		b.Publish(retainTick{n})
	}
	ch, cancel := b.Subscribe(topic.Replay[retainTick](topic.Last(1)), topic.Buffer[retainTick](4))
	defer cancel()
	if got := retainTake(ch); !slices.Equal(got, retainTicks(2)) {
		t.Errorf("received %v, want the current value [{2}]", got)
	}
	b.Publish(retainTick{3})
	if got := retainTake(ch); !slices.Equal(got, retainTicks(3)) {
		t.Errorf("then %v, want [{3}]", got)
	}
}

// The log keeps the last Count values, whatever the ring's growth; a read
// below them starts at the oldest kept and says how many were skipped.
func TestRetentionTrimsByCount(t *testing.T) {
	for _, count := range []int{1, 2, 3, 7, 8, 9, 13, 16, 17, 50, 64} {
		for _, published := range []int{0, 1, count - 1, count, count + 1, 2*count + 3, 100} {
			if published < 0 {
				continue
			}
			t.Run(fmt.Sprintf("Count=%d/published=%d", count, published), func(t *testing.T) {
				var b topic.Broker
				b.Retain[retainTick](topic.Retention{Count: count})
				for n := range published {
					if o, _ := b.Append(retainTick{n}); o != uint64(n) {
						t.Fatalf("Append #%d returned offset %d", n, o)
					}
				}
				head := uint64(max(published-count, 0))
				recs, next, skipped := b.Read[retainTick](0, 1000)
				if got, want := retainOffsets(recs), retainRange(head, uint64(published)); !slices.Equal(got, want) {
					t.Errorf("Read(0) offsets %v, want %v", got, want)
				}
				for _, r := range recs {
					if r.Value.N != int(r.Offset) {
						t.Errorf("offset %d holds %v", r.Offset, r.Value)
					}
				}
				if next != uint64(published) || skipped != head {
					t.Errorf("Read(0): next %d, skipped %d; want %d, %d", next, skipped, published, head)
				}
				ch, cancel := b.Subscribe(topic.Replay[retainTick](topic.Earliest()), topic.Buffer[retainTick](1000))
				defer cancel()
				if got, want := retainTake(ch), retainTicks(retainRange(head, uint64(published))...); !slices.Equal(got, want) {
					t.Errorf("Earliest replays %v, want %v", got, want)
				}
			})
		}
	}
}

// With an age bound, values older than it are dropped from the log (a value
// exactly that old is kept), for reads and replays alike, while the count
// bound still holds. The clock is synctest's: time.Sleep advances it.
func TestRetentionTrimsByAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[retainTick](topic.Retention{Count: 100, Age: 10 * time.Second})
		t0 := time.Now()
		at := func(o uint64) time.Time { return t0.Add([]time.Duration{0, 4 * time.Second, 8 * time.Second}[o]) }
		read := func(wantOffsets []uint64, wantSkipped uint64) {
			t.Helper()
			recs, next, skipped := b.Read[retainTick](0, 100)
			if got := retainOffsets(recs); !slices.Equal(got, wantOffsets) || skipped != wantSkipped {
				t.Errorf("at %v: Read(0) offsets %v, skipped %d; want %v, %d", time.Since(t0), got, skipped, wantOffsets, wantSkipped)
			}
			if want := wantSkipped + uint64(len(wantOffsets)); next != want {
				t.Errorf("at %v: Read(0) next %d, want %d", time.Since(t0), next, want)
			}
			for _, r := range recs {
				if !r.Time.Equal(at(r.Offset)) {
					t.Errorf("record %d has time %v, want %v", r.Offset, r.Time, at(r.Offset))
				}
			}
		}
		replay := func(want []uint64) {
			t.Helper()
			ch, cancel := b.Subscribe(topic.Replay[retainTick](topic.Earliest()), topic.Buffer[retainTick](10))
			defer cancel()
			if got, want := retainTake(ch), retainTicks(want...); !slices.Equal(got, want) {
				t.Errorf("at %v: Earliest replays %v, want %v", time.Since(t0), got, want)
			}
		}

		b.Publish(retainTick{0}) // at 0s
		time.Sleep(4 * time.Second)
		b.Publish(retainTick{1}) // at 4s
		time.Sleep(4 * time.Second)
		b.Publish(retainTick{2}) // at 8s
		read(retainRange(0, 3), 0)
		time.Sleep(2 * time.Second) // 10s: 0 is exactly 10s old, still kept
		read(retainRange(0, 3), 0)
		replay(retainRange(0, 3))
		// Each step replays before it reads, as both must trim.
		// 0 is older than 10s once the tick whose clock reading the reads
		// share has ended (see Retention).
		time.Sleep(2 * time.Millisecond)
		replay(retainRange(1, 3))
		read(retainRange(1, 3), 1)
		time.Sleep(4 * time.Second) // 14s+2ms: 1 is too old
		last, cancel := b.Subscribe(topic.Replay[retainTick](topic.Last(3)), topic.Buffer[retainTick](10))
		if got := retainTake(last); !slices.Equal(got, retainTicks(2)) {
			t.Errorf("Last(3) replays %v, want [{2}]", got)
		}
		cancel()
		read(retainRange(2, 3), 2)
		time.Sleep(time.Minute) // 74s+2ms: everything is too old
		replay(nil)
		read(nil, 3)
		at3, cancel := b.Subscribe(topic.Replay[retainTick](topic.At(1)), topic.Buffer[retainTick](10))
		defer cancel()
		if got := retainTake(at3); len(got) != 0 {
			t.Errorf("At(1) with nothing kept replays %v", got)
		}
		time.Sleep(time.Minute) // 134s+2ms
		// Offsets carry on after a log emptied by age.
		if o, ok := b.Append(retainTick{3}); o != 3 || !ok {
			t.Errorf("Append after the log emptied = %d, %v; want 3, true", o, ok)
		}
		if got := retainTake(at3); !slices.Equal(got, retainTicks(3)) {
			t.Errorf("then the subscription receives %v, want [{3}]", got)
		}
		recs, next, skipped := b.Read[retainTick](0, 100)
		if got := retainOffsets(recs); !slices.Equal(got, []uint64{3}) || next != 4 || skipped != 3 {
			t.Errorf("Read(0) = %v, %d, %d; want [3], 4, 3", got, next, skipped)
		}
	})
}

// The age bound does not lift the count bound.
func TestRetentionByAgeStillTrimsByCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[retainTick](topic.Retention{Count: 3, Age: time.Hour})
		for n := range 10 {
			b.Publish(retainTick{n})
			time.Sleep(time.Second)
		}
		recs, next, skipped := b.Read[retainTick](0, 100)
		if got := retainOffsets(recs); !slices.Equal(got, retainRange(7, 10)) || next != 10 || skipped != 7 {
			t.Errorf("Read(0) = %v, %d, %d; want [7 8 9], 10, 7", got, next, skipped)
		}
	})
}

// A record carries the offset and the time of its publication: the same on
// a live Record subscription, a replaying one, a pull read, and each way of
// following the log: a Follower's Read, a channel follower of records and a
// handler following them.
func TestRecordsCarryOffsetAndTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		// A Record subscription made before Retain receives records once
		// the type is retained.
		live, cancel := b.Subscribe(topic.Buffer[topic.Record[retainTick]](10))
		defer cancel()
		b.Retain[retainTick](topic.Retention{Count: 10})
		t0 := time.Now()
		const step = time.Minute + 123456789*time.Nanosecond // times to the nanosecond
		for n := range 3 {
			b.Publish(retainTick{n})
			time.Sleep(step)
		}
		replayed, cancel := b.Subscribe(topic.Buffer[topic.Record[retainTick]](10), topic.Replay[topic.Record[retainTick]](topic.Earliest()))
		defer cancel()
		read, _, _ := b.Read[retainTick](0, 10)
		f := b.Follow[retainTick](topic.Replay[retainTick](topic.Earliest()))
		defer f.Close()
		followerRead := make([]topic.Record[retainTick], 10)
		followerRead = followerRead[:f.Read(followerRead)]
		from := topic.Replay[topic.Record[retainTick]](topic.Earliest())
		followed, cancel := b.Subscribe(topic.Follow[topic.Record[retainTick]](), topic.Buffer[topic.Record[retainTick]](10), from)
		defer cancel()
		handled := make(chan topic.Record[retainTick], 10)
		defer b.Handle(func(_ context.Context, r topic.Record[retainTick]) error {
			handled <- r
			return nil
		}, topic.Follow[topic.Record[retainTick]](), from)()
		synctest.Wait() // the pump and the handler have taken all three
		for name, got := range map[string][]topic.Record[retainTick]{
			"live": retainTake(live), "replayed": retainTake(replayed), "read": read,
			"Follower.Read": followerRead, "channel follower": retainTake(followed), "handler follower": retainTake(handled),
		} {
			if len(got) != 3 {
				t.Fatalf("%s: %d records, want 3", name, len(got))
			}
			for i, r := range got {
				want := t0.Add(time.Duration(i) * step)
				if r.Offset != uint64(i) || r.Value.N != i || !r.Time.Equal(want) {
					t.Errorf("%s: record %d = %d %v %v, want %d {%d} %v", name, i, r.Offset, r.Value, r.Time, i, i, want)
				}
			}
		}
	})
}

// Read below the head starts at the head and counts what it skipped.
func TestReadBelowTheHeadReportsSkipped(t *testing.T) {
	var b topic.Broker
	b.Retain[retainTick](topic.Retention{Count: 4})
	for n := range 10 {
		b.Publish(retainTick{n}) // keeps 6 to 9
	}
	tests := []struct {
		from                  uint64
		max                   int
		want                  []uint64
		wantNext, wantSkipped uint64
	}{
		{0, 2, retainRange(6, 8), 8, 6},
		{0, 100, retainRange(6, 10), 10, 6},
		{5, 100, retainRange(6, 10), 10, 1},
		{6, 100, retainRange(6, 10), 10, 0},
		{8, 100, retainRange(8, 10), 10, 0},
		{3, 0, nil, 6, 3}, // nothing read, the skip still reported
	}
	for _, tt := range tests {
		recs, next, skipped := b.Read[retainTick](tt.from, tt.max)
		if got := retainOffsets(recs); !slices.Equal(got, tt.want) || next != tt.wantNext || skipped != tt.wantSkipped {
			t.Errorf("Read(%d, %d) = %v, %d, %d; want %v, %d, %d", tt.from, tt.max, got, next, skipped, tt.want, tt.wantNext, tt.wantSkipped)
		}
	}
	// A reader that follows next misses nothing that is kept.
	var all []uint64
	for from, i := uint64(0), 0; i < 10; i++ {
		recs, next, _ := b.Read[retainTick](from, 1)
		all = append(all, retainOffsets(recs)...)
		from = next
	}
	if !slices.Equal(all, retainRange(6, 10)) {
		t.Errorf("reading one at a time from 0 gives %v, want [6 7 8 9]", all)
	}
}

// Pull reads at the edges of what is kept.
func TestReadAtTheEdges(t *testing.T) {
	var b topic.Broker
	b.Retain[retainTick](topic.Retention{Count: 5})
	// Before any publication: nothing, and the same offset.
	for _, from := range []uint64{0, 3} {
		if recs, next, skipped := b.Read[retainTick](from, 10); recs != nil || next != from || skipped != 0 {
			t.Errorf("empty log: Read(%d, 10) = %v, %d, %d; want nil, %d, 0", from, recs, next, skipped, from)
		}
	}
	for n := range 8 {
		b.Publish(retainTick{n}) // keeps 3 to 7, next is 8
	}
	tests := []struct {
		name                  string
		from                  uint64
		max                   int
		want                  []uint64
		wantNext, wantSkipped uint64
	}{
		{"from the head", 3, 10, retainRange(3, 8), 8, 0},
		{"from the last", 7, 10, retainRange(7, 8), 8, 0},
		{"from next", 8, 10, nil, 8, 0},
		{"past next", 9, 10, nil, 9, 0},
		{"far past next", 1 << 40, 10, nil, 1 << 40, 0},
		{"at MaxUint64", ^uint64(0), 10, nil, ^uint64(0), 0},
		{"max 0", 4, 0, nil, 4, 0},
		{"max negative", 4, -1, nil, 4, 0},
		{"max 1", 4, 1, retainRange(4, 5), 5, 0},
		{"max exactly what is there", 3, 5, retainRange(3, 8), 8, 0},
		{"max larger than what is there", 5, 1 << 30, retainRange(5, 8), 8, 0},
	}
	for _, tt := range tests {
		recs, next, skipped := b.Read[retainTick](tt.from, tt.max)
		if got := retainOffsets(recs); !slices.Equal(got, tt.want) || next != tt.wantNext || skipped != tt.wantSkipped {
			t.Errorf("%s: Read(%d, %d) = %v, %d, %d; want %v, %d, %d", tt.name, tt.from, tt.max, got, next, skipped, tt.want, tt.wantNext, tt.wantSkipped)
		}
		for _, r := range recs {
			if r.Value.N != int(r.Offset) {
				t.Errorf("%s: offset %d holds %v", tt.name, r.Offset, r.Value)
			}
		}
	}
}

// Read and Replay of a type that is not retained panic, the Record of one
// included.
func TestReadAndReplayOfATypeNotRetainedPanic(t *testing.T) {
	var b topic.Broker
	retainWantPanic(t, "Read on a zero broker", func() { b.Read[retainTick](0, 1) })
	retainWantPanic(t, "Replay on a zero broker", func() { b.Subscribe(topic.Replay[retainTick](topic.Earliest())) })
	b.Retain[retainNamed](topic.Retention{Count: 1})
	_, cancel := b.Subscribe[retainTick]()
	defer cancel()
	retainWantPanic(t, "Read", func() { b.Read[retainTick](0, 1) })
	retainWantPanic(t, "Replay", func() { b.Subscribe(topic.Replay[retainTick](topic.Last(1))) })
	retainWantPanic(t, "Replay(Next())", func() { b.Subscribe(topic.Replay[retainTick](topic.Next())) })
	retainWantPanic(t, "Replay on Record", func() {
		b.Subscribe(topic.Replay[topic.Record[retainTick]](topic.Earliest()))
	})
	if ss := b.Subscriptions(); len(ss) != 1 {
		t.Errorf("a subscription that panicked was registered: %v", ss)
	}
}

// Append returns consecutive offsets from 0; for a type that is not
// retained it publishes like Publish and returns false, as after Shutdown.
func TestAppendReturnsConsecutiveOffsetsAndFalseForATypeNotRetained(t *testing.T) {
	var b topic.Broker
	b.Retain[retainTick](topic.Retention{Count: 2})
	recs, cancel := b.Subscribe(topic.Buffer[topic.Record[retainTick]](10))
	defer cancel()
	for n := range 5 {
		o, ok := b.Append(retainTick{n})
		if o != uint64(2*n) || !ok {
			t.Errorf("Append #%d = %d, %v; want %d, true", n, o, ok, 2*n)
		}
		b.Publish(retainTick{-1}) // Publish takes an offset too
	}
	rs := retainTake(recs)
	if len(rs) != 10 {
		t.Errorf("%d records, want 10", len(rs))
	}
	for i, r := range rs {
		if r.Offset != uint64(i) {
			t.Errorf("record %d has offset %d", i, r.Offset)
		}
		if want := map[bool]int{true: i / 2, false: -1}[i%2 == 0]; r.Value.N != want {
			t.Errorf("record %d holds %v, want {%d}", i, r.Value, want)
		}
	}

	other, cancel := b.Subscribe(topic.Buffer[retainOther](2))
	defer cancel()
	if o, ok := b.Append(retainOther{1, 2}); o != 0 || ok {
		t.Errorf("Append of a type not retained = %d, %v; want 0, false", o, ok)
	}
	if got := retainTake(other); !slices.Equal(got, []retainOther{{1, 2}}) {
		t.Errorf("Append of a type not retained delivered %v, want [{1 2}]", got)
	}
	if o, ok := b.Append[fmt.Stringer](retainNamed{1}); o != 0 || ok {
		t.Errorf("Append of an interface type = %d, %v; want 0, false", o, ok)
	}

	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o, ok := b.Append(retainTick{9}); o != 0 || ok {
		t.Errorf("Append after Shutdown = %d, %v; want 0, false", o, ok)
	}
}

// A backlog larger than the buffer loses values under the subscription's
// policy, counted and reported to OnLoss like live losses: drop-newest keeps
// the oldest and loses the rest as Full, drop-oldest keeps the newest and
// evicts the rest.
func TestReplayOverflowIsCountedAndReported(t *testing.T) {
	tests := []struct {
		policy topic.Policy
		buffer int
		want   []uint64 // queued
		cause  topic.Cause
		lost   []uint64 // reported, in order
	}{
		{topic.DropNewest, 3, retainRange(0, 3), topic.Full, retainRange(3, 10)},
		{topic.DropOldest, 3, retainRange(7, 10), topic.Evicted, retainRange(0, 7)},
		{topic.DropNewest, 0, nil, topic.Full, retainRange(0, 10)},
		{topic.DropOldest, 0, nil, topic.Full, retainRange(0, 10)},
		{topic.DropOldest, 10, retainRange(0, 10), 0, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/buffer=%d", tt.policy, tt.buffer), func(t *testing.T) {
			var b topic.Broker
			b.Retain[retainTick](topic.Retention{Count: 10})
			for n := range 10 {
				b.Publish(retainTick{n})
			}
			var reported []topic.Loss[retainTick]
			ch, cancel := b.Subscribe(topic.Name[retainTick]("values"), topic.Buffer[retainTick](tt.buffer),
				topic.Overflow[retainTick](tt.policy), topic.Replay[retainTick](topic.Earliest()),
				topic.OnLoss(func(l topic.Loss[retainTick]) { reported = append(reported, l) }))
			defer cancel()
			type R = topic.Record[retainTick]
			var reportedR []topic.Loss[R]
			rch, cancelR := b.Subscribe(topic.Name[R]("records"), topic.Buffer[R](tt.buffer),
				topic.Overflow[R](tt.policy), topic.Replay[R](topic.Earliest()),
				topic.OnLoss(func(l topic.Loss[R]) { reportedR = append(reportedR, l) }))
			defer cancelR()

			var want topic.Lost
			switch tt.cause {
			case topic.Full:
				want.Full = uint64(len(tt.lost))
			case topic.Evicted:
				want.Evicted = uint64(len(tt.lost))
			}
			if got := retainLost(t, &b, "values"); got != want {
				t.Errorf("values: Lost %+v, want %+v", got, want)
			}
			if got := retainLost(t, &b, "records"); got != want {
				t.Errorf("records: Lost %+v, want %+v", got, want)
			}
			var wantReported []topic.Loss[retainTick]
			for _, o := range tt.lost {
				wantReported = append(wantReported, topic.Loss[retainTick]{Cause: tt.cause, Value: retainTick{int(o)}})
			}
			if !slices.Equal(reported, wantReported) {
				t.Errorf("values: reported %v, want %v", reported, wantReported)
			}
			if len(reportedR) != len(tt.lost) {
				t.Errorf("records: reported %d losses, want %d", len(reportedR), len(tt.lost))
			}
			for i, l := range reportedR {
				if i < len(tt.lost) && (l.Cause != tt.cause || l.Value.Offset != tt.lost[i] || l.Value.Value.N != int(tt.lost[i])) {
					t.Errorf("records: loss %d is %v of %d, want %v of %d", i, l.Cause, l.Value.Offset, tt.cause, tt.lost[i])
				}
			}
			if got, want := retainTake(ch), retainTicks(tt.want...); !slices.Equal(got, want) {
				t.Errorf("values: queued %v, want %v", got, want)
			}
			if got := retainOffsets(retainTake(rch)); !slices.Equal(got, tt.want) {
				t.Errorf("records: queued %v, want %v", got, tt.want)
			}
		})
	}
}

// Wildcard subscriptions (any, an interface) and From sources of a retained
// type receive the values published after they subscribed, once each, as
// values of the type: nothing replayed, and no Record.
func TestWildcardSubscriptionsSeeLiveValuesOnly(t *testing.T) {
	var b topic.Broker
	b.Retain[retainNamed](topic.Retention{Count: 10})
	for n := range 3 {
		b.Publish(retainNamed{n})
	}
	anyCh, cancel := b.Subscribe(topic.Buffer[any](10))
	defer cancel()
	strCh, cancel := b.Subscribe(topic.Buffer[fmt.Stringer](10))
	defer cancel()
	fromCh, cancel := b.Subscribe(topic.Buffer[retainOther](10),
		topic.From(func(n retainNamed) (retainOther, bool) { return retainOther{N: n.N}, true }))
	defer cancel()
	for n := 3; n < 5; n++ {
		b.Publish(retainNamed{n})
	}
	want := []any{retainNamed{3}, retainNamed{4}}
	if got := retainTake(anyCh); !slices.Equal(got, want) {
		t.Errorf("any received %v, want %v", got, want)
	}
	var strs []any
	for _, s := range retainTake(strCh) {
		strs = append(strs, s)
	}
	if !slices.Equal(strs, want) {
		t.Errorf("fmt.Stringer received %v, want %v", strs, want)
	}
	if got := retainTake(fromCh); !slices.Equal(got, []retainOther{{N: 3}, {N: 4}}) {
		t.Errorf("a From source received %v, want [{0 3} {0 4}]", got)
	}
}

// Replay on a wildcard subscription panics at Subscribe, even when the
// types it matches are retained; so does Replay on a type that is not
// retained, even if its From source is, and nothing is registered.
func TestReplayOnAWildcardSubscriptionPanics(t *testing.T) {
	var b topic.Broker
	b.Retain[retainNamed](topic.Retention{Count: 10})
	b.Publish(retainNamed{1})
	retainWantPanic(t, "Replay on any", func() { b.Subscribe(topic.Replay[any](topic.Earliest())) })
	retainWantPanic(t, "Replay on fmt.Stringer", func() { b.Subscribe(topic.Replay[fmt.Stringer](topic.Last(1))) })
	retainWantPanic(t, "Replay on a From target", func() {
		b.Subscribe(topic.Replay[retainOther](topic.Earliest()),
			topic.From(func(n retainNamed) (retainOther, bool) { return retainOther{}, true }))
	})
	if ss := b.Subscriptions(); len(ss) != 0 {
		t.Errorf("a subscription that panicked was registered: %v", ss)
	}
}

// Declaring the same bound again changes nothing: the values and the
// offsets carry on. Another bound panics and changes nothing either.
func TestRetainAgainWithTheSameBoundIsANoOpAnotherPanics(t *testing.T) {
	var b topic.Broker
	r := topic.Retention{Count: 3, Age: time.Hour}
	b.Retain[retainTick](r)
	for n := range 5 {
		b.Publish(retainTick{n})
	}
	b.Retain[retainTick](r)
	for _, other := range []topic.Retention{{Count: 4, Age: time.Hour}, {Count: 3}, {Count: 3, Age: time.Minute}} {
		retainWantPanic(t, fmt.Sprintf("Retain(%+v) after Retain(%+v)", other, r), func() { b.Retain[retainTick](other) })
	}
	if o, _ := b.Append(retainTick{5}); o != 5 {
		t.Errorf("Append after re-declaring = offset %d, want 5", o)
	}
	recs, next, skipped := b.Read[retainTick](0, 10)
	if got := retainOffsets(recs); !slices.Equal(got, retainRange(3, 6)) || next != 6 || skipped != 3 {
		t.Errorf("Read(0) = %v, %d, %d; want [3 4 5], 6, 3: the bound changed", got, next, skipped)
	}
}

// Retain panics with a "topic: " message on a non-positive count, a negative
// age or an interface type; a zero age means no age bound.
func TestRetainRejectsBadInput(t *testing.T) {
	var b topic.Broker
	for _, r := range []topic.Retention{{}, {Count: 0, Age: time.Second}, {Count: -1}, {Count: 1, Age: -1}, {Count: -5, Age: -time.Hour}} {
		retainWantPanic(t, fmt.Sprintf("Retain(%+v)", r), func() { b.Retain[retainTick](r) })
	}
	retainWantPanic(t, "Retain[any]", func() { b.Retain[any](topic.Retention{Count: 1}) })
	retainWantPanic(t, "Retain[fmt.Stringer]", func() { b.Retain[fmt.Stringer](topic.Retention{Count: 1}) })
	// None of them retained the type.
	retainWantPanic(t, "Read after a rejected Retain", func() { b.Read[retainTick](0, 1) })
	b.Retain[retainTick](topic.Retention{Count: 1, Age: 0})
	if _, ok := b.Append(retainTick{}); !ok {
		t.Errorf("Count 1 with no age bound was not retained")
	}
}

// After Shutdown, Retain does nothing.
func TestRetainAfterShutdownDoesNothing(t *testing.T) {
	var b topic.Broker
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.Retain[retainTick](topic.Retention{Count: 1})
	if _, ok := b.Append(retainTick{}); ok {
		t.Errorf("Append after Shutdown returned true")
	}
}

// After Shutdown, Subscribe with Replay on a type retained before returns a
// closed channel, as Subscribe does (see Shutdown), and Read returns nothing
// and its from.
func TestReplayAndReadAfterShutdown(t *testing.T) {
	var b topic.Broker
	b.Retain[retainTick](topic.Retention{Count: 4})
	b.Publish(retainTick{1})
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	msg, panicked := panicMessage(func() {
		ch, cancel := b.Subscribe(topic.Replay[retainTick](topic.Earliest()))
		defer cancel()
		if _, ok := <-ch; ok {
			t.Errorf("Subscribe with Replay after Shutdown: the channel is open")
		}
	})
	if panicked {
		t.Errorf("Subscribe with Replay after Shutdown panicked: %s", msg)
	}
	msg, panicked = panicMessage(func() {
		if recs, next, skipped := b.Read[retainTick](2, 10); recs != nil || next != 2 || skipped != 0 {
			t.Errorf("Read(2, 10) after Shutdown = %v, %d, %d; want nil, 2, 0", recs, next, skipped)
		}
	})
	if panicked {
		t.Errorf("Read after Shutdown panicked: %s", msg)
	}
}

// A subscription's From filter of its own type decides for the values it
// replays as for the live ones.
func TestReplayPassesThroughTheSubscriptionsFilter(t *testing.T) {
	var b topic.Broker
	b.Retain[retainTick](topic.Retention{Count: 10})
	for n := range 6 {
		b.Publish(retainTick{n})
	}
	even := topic.From(func(v retainTick) (retainTick, bool) { return v, v.N%2 == 0 })
	ch, cancel := b.Subscribe(even, topic.Replay[retainTick](topic.Earliest()), topic.Buffer[retainTick](10))
	defer cancel()
	b.Publish(retainTick{6})
	b.Publish(retainTick{7})
	if got, want := retainTake(ch), retainTicks(0, 2, 4, 6); !slices.Equal(got, want) {
		t.Errorf("received %v, want %v", got, want)
	}
}

// From and OnLoss functions run on a live publication of a retained type
// after it has let go of the type's sequencing point: they may publish the
// type themselves, which gets the next offset.
func TestLiveFromAndOnLossMayPublishTheRetainedType(t *testing.T) {
	// nested publishes -1-n for each n, once: the log must read 0, -1, 1,
	// -2, 2, -3.
	type setup func(b *topic.Broker, nested func(n int)) (cancel func())
	cases := []struct {
		name  string
		setup setup
	}{
		{"From of another type", func(b *topic.Broker, nested func(int)) func() {
			_, cancel := b.Subscribe(topic.Buffer[retainOther](10), topic.From(func(v retainTick) (retainOther, bool) {
				nested(v.N)
				return retainOther{N: v.N}, true
			}))
			return cancel
		}},
		{"From of the type", func(b *topic.Broker, nested func(int)) func() {
			_, cancel := b.Subscribe(topic.Buffer[retainTick](10), topic.From(func(v retainTick) (retainTick, bool) {
				nested(v.N)
				return v, true
			}))
			return cancel
		}},
		{"From of its Record", func(b *topic.Broker, nested func(int)) func() {
			_, cancel := b.Subscribe(topic.Buffer[topic.Record[retainTick]](10),
				topic.From(func(r topic.Record[retainTick]) (topic.Record[retainTick], bool) {
					nested(r.Value.N)
					return r, true
				}))
			return cancel
		}},
		{"OnLoss", func(b *topic.Broker, nested func(int)) func() {
			_, cancel := b.Subscribe(topic.Buffer[retainTick](0),
				topic.OnLoss(func(l topic.Loss[retainTick]) { nested(l.Value.N) }))
			return cancel
		}},
		{"OnLoss of a Record subscription", func(b *topic.Broker, nested func(int)) func() {
			_, cancel := b.Subscribe(topic.Buffer[topic.Record[retainTick]](0),
				topic.OnLoss(func(l topic.Loss[topic.Record[retainTick]]) { nested(l.Value.Value.N) }))
			return cancel
		}},
	}
	for _, c := range cases {
		for _, viaAppend := range []bool{false, true} {
			name := c.name + "/nested Publish"
			if viaAppend {
				name = c.name + "/nested Append"
			}
			t.Run(name, func(t *testing.T) {
				var b topic.Broker
				var panics []string
				defer c.setup(&b, retainNested(&b, viaAppend, &panics))()
				b.Retain[retainTick](topic.Retention{Count: 10})
				retainWithin(t, func() {
					for n := range 3 {
						b.Publish(retainTick{n})
					}
				})
				if len(panics) != 0 {
					t.Fatalf("the nested publications panicked: %q", panics)
				}
				recs, next, _ := b.Read[retainTick](0, 10)
				var got []int
				for _, r := range recs {
					got = append(got, r.Value.N)
				}
				if want := []int{0, -1, 1, -2, 2, -3}; !slices.Equal(got, want) || next != 6 {
					t.Errorf("the log holds %v, next %d; want %v, 6", got, next, want)
				}
			})
		}
	}
}

// A replay runs its subscription's functions without holding the type's
// sequencing point, so they may publish the type they replay. What a From
// function publishes reaches it live, at once: before the value the function
// was given, as a nested publication reaches a From source. What an OnLoss
// function publishes is in the log after the backlog.
func TestReplayFunctionsMayPublishTheRetainedType(t *testing.T) {
	type setup func(b *topic.Broker, nested func(n int)) (ch <-chan int, cancel func())
	ints := func(ch <-chan retainTick) <-chan int {
		out := make(chan int, 16)
		for _, v := range retainTake(ch) {
			out <- v.N
		}
		close(out)
		return out
	}
	cases := []struct {
		name     string
		setup    setup
		received []int // of the replay and of the live publication of 3
	}{
		{"From", func(b *topic.Broker, nested func(int)) (<-chan int, func()) {
			ch, cancel := b.Subscribe(topic.Buffer[retainTick](10), topic.Replay[retainTick](topic.Earliest()),
				topic.From(func(v retainTick) (retainTick, bool) {
					nested(v.N)
					return v, true
				}))
			return ints(ch), cancel
		}, []int{-1, 0, -2, 1, -3, 2}},
		{"OnLoss", func(b *topic.Broker, nested func(int)) (<-chan int, func()) {
			_, cancel := b.Subscribe(topic.Buffer[retainTick](0), topic.Replay[retainTick](topic.Earliest()),
				topic.OnLoss(func(l topic.Loss[retainTick]) { nested(l.Value.N) }))
			return nil, cancel
		}, nil},
		{"From of a Record subscription", func(b *topic.Broker, nested func(int)) (<-chan int, func()) {
			type R = topic.Record[retainTick]
			ch, cancel := b.Subscribe(topic.Buffer[R](10), topic.Replay[R](topic.Earliest()),
				topic.From(func(r R) (R, bool) {
					nested(r.Value.N)
					return r, true
				}))
			out := make(chan int, 16)
			for _, r := range retainTake(ch) {
				out <- r.Value.N
			}
			close(out)
			return out, cancel
		}, []int{-1, 0, -2, 1, -3, 2}},
		{"OnLoss of a Record subscription", func(b *topic.Broker, nested func(int)) (<-chan int, func()) {
			type R = topic.Record[retainTick]
			_, cancel := b.Subscribe(topic.Buffer[R](0), topic.Replay[R](topic.Last(3)),
				topic.OnLoss(func(l topic.Loss[R]) { nested(l.Value.Value.N) }))
			return nil, cancel
		}, nil},
	}
	for _, c := range cases {
		for _, viaAppend := range []bool{false, true} {
			name := c.name + "/nested Publish"
			if viaAppend {
				name = c.name + "/nested Append"
			}
			t.Run(name, func(t *testing.T) {
				var b topic.Broker
				b.Retain[retainTick](topic.Retention{Count: 10})
				for n := range 3 {
					b.Publish(retainTick{n})
				}
				var panics []string
				nested := retainNested(&b, viaAppend, &panics)
				var (
					got    <-chan int
					cancel func()
				)
				retainWithin(t, func() { got, cancel = c.setup(&b, nested) })
				defer cancel()
				if len(panics) != 0 {
					t.Fatalf("the nested publications panicked: %q", panics)
				}
				if got != nil {
					if vs := slices.Collect(chanValues(got)); !slices.Equal(vs, c.received) {
						t.Errorf("the replay delivered %v, want %v", vs, c.received)
					}
				}
				// Live, the functions may publish too: 3 gets offset 6 and
				// its nested publication 7.
				retainWithin(t, func() { b.Publish(retainTick{3}) })
				recs, _, _ := b.Read[retainTick](0, 10)
				var log []int
				for _, r := range recs {
					log = append(log, r.Value.N)
				}
				if want := []int{0, 1, 2, -1, -2, -3, 3, -4}; !slices.Equal(log, want) {
					t.Errorf("the log holds %v, want %v", log, want)
				}
			})
		}
	}
}

// Another goroutine publishing the type while a replay runs a function of
// the user's is not held up by it: its value reaches the subscription once,
// live, and the backlog all the same.
func TestReplayDoesNotHoldUpOtherPublishers(t *testing.T) {
	var b topic.Broker
	b.Retain[retainTick](topic.Retention{Count: 10})
	for n := range 3 {
		b.Publish(retainTick{n})
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var (
		wg     sync.WaitGroup
		ch     <-chan retainTick
		cancel func()
	)
	wg.Go(func() {
		ch, cancel = b.Subscribe(topic.Buffer[retainTick](10), topic.Replay[retainTick](topic.Earliest()),
			topic.From(func(v retainTick) (retainTick, bool) {
				if v.N == 0 {
					close(entered)
					<-release
				}
				return v, true
			}))
	})
	<-entered
	// The replay is inside its From function: a publication and a read of
	// the type return all the same.
	retainWithin(t, func() {
		b.Publish(retainTick{3})
		if recs, _, _ := b.Read[retainTick](3, 1); len(recs) != 1 || recs[0].Value.N != 3 {
			t.Errorf("Read during the replay: %v", recs)
		}
	})
	close(release)
	wg.Wait()
	defer cancel()
	got := retainTake(ch)
	slices.SortFunc(got, func(x, y retainTick) int { return x.N - y.N })
	if !slices.Equal(got, retainTicks(0, 1, 2, 3)) {
		t.Errorf("received %v, want {0} {1} {2} {3} in any order", got)
	}
}

// Two replays of two retained types at once, each with functions that use
// the other type's log (Read, Publish, a nested replay) while the other
// replay is inside its own: neither waits for the other.
func TestReplaysOfTwoTypesUsingEachOtherDoNotDeadlock(t *testing.T) {
	type tickA struct{ N int }
	type tickB struct{ N int }
	uses := map[string]func(b *topic.Broker, other string){
		"Read": func(b *topic.Broker, other string) {
			if other == "A" {
				b.Read[tickA](0, 10)
			} else {
				b.Read[tickB](0, 10)
			}
		},
		"Publish": func(b *topic.Broker, other string) {
			if other == "A" {
				b.Publish(tickA{-1})
			} else {
				b.Publish(tickB{-1})
			}
		},
		"nested Replay": func(b *topic.Broker, other string) {
			if other == "A" {
				_, cancel := b.Subscribe(topic.Buffer[tickA](10), topic.Replay[tickA](topic.Earliest()))
				cancel()
			} else {
				_, cancel := b.Subscribe(topic.Buffer[tickB](10), topic.Replay[tickB](topic.Earliest()))
				cancel()
			}
		},
	}
	for name, use := range uses {
		for _, hook := range []string{"From", "OnLoss"} {
			t.Run(name+" from "+hook, func(t *testing.T) {
				var b topic.Broker
				b.Retain[tickA](topic.Retention{Count: 10})
				b.Retain[tickB](topic.Retention{Count: 10})
				b.Publish(tickA{1})
				b.Publish(tickB{1})
				// Both replays enter their function, wait for each other,
				// then use the other's log.
				var both sync.WaitGroup
				both.Add(2)
				meet := func(n int, other string) {
					if n < 0 {
						return
					}
					both.Done()
					both.Wait()
					use(&b, other)
				}
				var wg sync.WaitGroup
				retainWithin(t, func() {
					wg.Go(func() {
						var cancel func()
						if hook == "From" {
							_, cancel = b.Subscribe(topic.Buffer[tickA](10), topic.Replay[tickA](topic.Earliest()),
								topic.From(func(v tickA) (tickA, bool) { meet(v.N, "B"); return v, true }))
						} else {
							_, cancel = b.Subscribe(topic.Buffer[tickA](0), topic.Replay[tickA](topic.Earliest()),
								topic.OnLoss(func(l topic.Loss[tickA]) { meet(l.Value.N, "B") }))
						}
						cancel()
					})
					wg.Go(func() {
						var cancel func()
						if hook == "From" {
							_, cancel = b.Subscribe(topic.Buffer[tickB](10), topic.Replay[tickB](topic.Earliest()),
								topic.From(func(v tickB) (tickB, bool) { meet(v.N, "A"); return v, true }))
						} else {
							_, cancel = b.Subscribe(topic.Buffer[tickB](0), topic.Replay[tickB](topic.Earliest()),
								topic.OnLoss(func(l topic.Loss[tickB]) { meet(l.Value.N, "A") }))
						}
						cancel()
					})
					wg.Wait()
				})
			})
		}
	}
}

// chanValues yields what ch holds until it is closed.
func chanValues[T any](ch <-chan T) func(func(T) bool) {
	return func(yield func(T) bool) {
		for v := range ch {
			if !yield(v) {
				return
			}
		}
	}
}

// A type that is not retained keeps its own path: its publications do not
// wait while a retained type's sequencing point is held (here by a replay
// whose From function blocks), and publishers of it run concurrently with
// those of a retained type and lose nothing.
func TestTypesNotRetainedAreUnaffected(t *testing.T) {
	const publishers = 4
	per := retainScale(2000)
	var b topic.Broker
	b.Retain[retainSeq](topic.Retention{Count: 16})
	b.Publish(retainSeq{P: -1})
	other, cancel := b.Subscribe(topic.Buffer[retainOther](publishers * per))
	defer cancel()

	held, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		_, cancel := b.Subscribe(topic.Buffer[retainSeq](1), topic.Replay[retainSeq](topic.Earliest()),
			topic.From(func(v retainSeq) (retainSeq, bool) {
				if v.P == -1 {
					close(held)
					<-release
				}
				return v, false
			}))
		cancel()
	})
	<-held
	retainWithin(t, func() { b.Publish(retainOther{-1, 0}) })
	close(release)
	wg.Wait()
	if got := retainTake(other); !slices.Equal(got, []retainOther{{-1, 0}}) {
		t.Fatalf("received %v", got)
	}

	for p := range publishers {
		wg.Go(func() {
			for n := range per {
				b.Publish(retainOther{p, n})
				b.Publish(retainSeq{p, n})
			}
		})
	}
	wg.Wait()
	got := retainTake(other)
	if len(got) != publishers*per {
		t.Fatalf("received %d values of the type not retained, want %d", len(got), publishers*per)
	}
	next := make([]int, publishers)
	for _, v := range got {
		if v.N != next[v.P] {
			t.Fatalf("publisher %d: received %d, want %d", v.P, v.N, next[v.P])
		}
		next[v.P]++
	}
	if o, ok := b.Append(retainOther{}); ok || o != 0 {
		t.Errorf("Append of the type not retained = %d, %v", o, ok)
	}
	retainWantPanic(t, "Read of the type not retained", func() { b.Read[retainOther](0, 1) })
	retainWantPanic(t, "Replay of the type not retained", func() { b.Subscribe(topic.Replay[retainOther](topic.Earliest())) })
	if _, next, _ := b.Read[retainSeq](0, 0); next != uint64(publishers*per+1-16) {
		t.Errorf("the retained type's head is %d, want %d", next, publishers*per+1-16)
	}
}

// A Record type is retained with its value type: declaring it itself
// panics, whatever the order of the declarations.
func TestRetainOfARecordTypePanics(t *testing.T) {
	for _, first := range []bool{false, true} {
		var b topic.Broker
		if first {
			b.Retain[retainTick](topic.Retention{Count: 10})
		}
		msg, ok := panicMessage(func() { b.Retain[topic.Record[retainTick]](topic.Retention{Count: 10}) })
		if !ok || !strings.HasPrefix(msg, "topic: ") {
			t.Errorf("Retain of a Record type (value type retained first: %v): panic %q, %v; want a \"topic: \" panic", first, msg, ok)
		}
	}
}

// A live record and the same record read back compare equal with ==: the
// broker keeps no monotonic clock reading in either.
func TestLiveAndReadRecordsAreEqual(t *testing.T) {
	var b topic.Broker
	b.Retain[retainTick](topic.Retention{Count: 10})
	ch, cancel := b.Subscribe[topic.Record[retainTick]]()
	defer cancel()
	b.Publish(retainTick{1})
	live := <-ch
	recs, _, _ := b.Read[retainTick](0, 1)
	if len(recs) != 1 || recs[0] != live {
		t.Errorf("read %v, live %v: want the same record", recs, live)
	}
}

// A retained type reads the clock at most once per tick (about a
// millisecond): every record's time is that of its publication or earlier by
// at most a tick (the timer and a publisher may wake at the same instant), times follow offsets, and the timer that ends each tick
// stops once the type goes idle and starts again with the next publication,
// from any publisher, without a reading ever outliving its tick. The bubble
// ends with the timer possibly pending, which synctest allows of a timer and
// would not of a goroutine.
func TestRecordTimesAreWithinAClockTick(t *testing.T) {
	const tick = time.Millisecond
	pauses := []time.Duration{0, 300 * time.Microsecond, 700 * time.Microsecond, tick, 3 * tick,
		49 * tick, 50 * tick, 51 * tick, 52 * tick, 2 * time.Second}
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[retainTick](topic.Retention{Count: 10000})
		const publishers = 3
		published := make([]map[uint64]time.Time, publishers)
		var wg sync.WaitGroup
		for p := range publishers {
			published[p] = make(map[uint64]time.Time)
			wg.Go(func() {
				for i := range 3 * len(pauses) {
					time.Sleep(pauses[(i*(p+1))%len(pauses)])
					off, ok := b.Append(retainTick{i})
					if !ok {
						t.Errorf("Append refused")
						return
					}
					published[p][off] = time.Now() // the bubble's clock stands still while goroutines run
				}
			})
		}
		wg.Wait()
		recs, _, _ := b.Read[retainTick](0, 10000)
		if len(recs) != publishers*3*len(pauses) {
			t.Fatalf("read %d records, want %d", len(recs), publishers*3*len(pauses))
		}
		var last time.Time
		for _, r := range recs {
			var at time.Time
			for p := range published {
				if tm, ok := published[p][r.Offset]; ok {
					at = tm
				}
			}
			if r.Time.After(at) || r.Time.Before(at.Add(-tick)) {
				t.Errorf("record %d has time %v, published at %v: not within [-%v, 0]", r.Offset, r.Time, at, tick)
			}
			if r.Time.Before(last) {
				t.Errorf("record %d has time %v, before the previous one's %v", r.Offset, r.Time, last)
			}
			last = r.Time
		}
		// Long idle: the next publication reads the clock afresh.
		time.Sleep(time.Second)
		off, _ := b.Append(retainTick{})
		if recs, _, _ := b.Read[retainTick](off, 1); len(recs) != 1 || !recs[0].Time.Equal(time.Now()) {
			t.Errorf("after a second idle, the record's time is %v, want %v", recs, time.Now())
		}
	})
}
