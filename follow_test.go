package topic_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

// fOrder is the retained type of the follower tests.
type fOrder struct{ N int }

// retainOrders makes fOrder a retained type of b that keeps 100 values, and
// publishes n of them, fOrder{0} to fOrder{n-1}, at offsets 0 to n-1.
func retainOrders(b *topic.Broker, n int) {
	b.Retain[fOrder](topic.Retention{Count: 100})
	for i := range n {
		b.Publish(fOrder{i})
	}
}

// fOffsets returns the offsets of recs.
func fOffsets(recs []topic.Record[fOrder]) []uint64 {
	var os []uint64
	for _, r := range recs {
		os = append(os, r.Offset)
	}
	return os
}

// fSeq returns the offsets from to to-1.
func fSeq(from, to uint64) []uint64 {
	var os []uint64
	for o := from; o < to; o++ {
		os = append(os, o)
	}
	return os
}

// fReadAll reads everything f can read now, in batches of n.
func fReadAll(f *topic.Follower[fOrder], n int) []topic.Record[fOrder] {
	var all []topic.Record[fOrder]
	buf := make([]topic.Record[fOrder], n)
	for {
		k := f.Read(buf)
		if k == 0 {
			return all
		}
		all = append(all, buf[:k]...)
	}
}

// fVal is a retained type of the follower tests, beside fOrder.
type fVal struct{ N int }

// fWithin runs fn on a goroutine of its own and fails t if it has not
// returned within d: a hang fails instead of blocking the test binary.
func fWithin(t *testing.T, d time.Duration, what string, fn func()) bool {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		t.Errorf("%s: still running after %v (deadlock)", what, d)
		return false
	}
}

// recordOffsets returns the offsets of recs, of any type (see fOffsets).
func recordOffsets[T any](recs []topic.Record[T]) []uint64 {
	var os []uint64
	for _, r := range recs {
		os = append(os, r.Offset)
	}
	return os
}

// offsetRange returns the offsets from from to to-1 (as fSeq does).
func offsetRange(from, to uint64) []uint64 {
	var os []uint64
	for o := from; o < to; o++ {
		os = append(os, o)
	}
	return os
}

// readAllOf reads everything f can read now, in batches of n (see
// fReadAll).
func readAllOf[T any](f *topic.Follower[T], n int) []topic.Record[T] {
	var all []topic.Record[T]
	buf := make([]topic.Record[T], n)
	for {
		k := f.Read(buf)
		if k == 0 {
			return all
		}
		all = append(all, buf[:k]...)
	}
}

// A follower reads every value from where it starts on, in offset order, at
// its own pace: however far behind it is, it loses nothing the log keeps.
func TestAFollowerReadsEveryValueKeptInOrder(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	b.Retain[fOrder](topic.Retention{Count: 10000})
	for n := range 3000 {
		b.Publish(fOrder{n})
	}
	early := b.Follow(topic.Replay[fOrder](topic.Earliest()))
	defer early.Close()
	late := b.Follow[fOrder]() // from the next value
	defer late.Close()
	last := b.Follow(topic.Replay[fOrder](topic.Last(10)))
	defer last.Close()
	at := b.Follow(topic.Replay[fOrder](topic.At(2500)))
	defer at.Close()
	for n := 3000; n < 5000; n++ {
		b.Publish(fOrder{n})
	}
	for _, c := range []struct {
		name     string
		f        *topic.Follower[fOrder]
		from, to uint64
	}{{"Earliest", early, 0, 5000}, {"Next", late, 3000, 5000}, {"Last(10)", last, 2990, 5000}, {"At(2500)", at, 2500, 5000}} {
		recs := fReadAll(c.f, 7)
		if got := fOffsets(recs); !slices.Equal(got, fSeq(c.from, c.to)) {
			t.Errorf("%s: read %d records, offsets %v..., want %d from %d", c.name, len(recs), got[:min(5, len(got))], c.to-c.from, c.from)
		}
		for _, r := range recs {
			if r.Value.N != int(r.Offset) || r.Skipped != 0 {
				t.Fatalf("%s: record %+v", c.name, r)
			}
		}
		if c.f.Offset() != 5000 {
			t.Errorf("%s: offset %d after reading all, want 5000", c.name, c.f.Offset())
		}
	}
}

// A channel follower waits for room in its channel rather than lose a
// value, and a handler follower with Retry keeps what follows a failing
// value in the log, not a queue: 3,000 orders into a slow at-least-once
// handler lose nothing.
func TestSlowFollowersLoseNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 4096})
		ch, cancel := b.Subscribe(topic.Follow[fOrder](), topic.Buffer[fOrder](1), topic.Name[fOrder]("channel"))
		defer cancel()
		var handled []int
		failed := map[int]int{}
		b.Handle(func(_ context.Context, o fOrder) error {
			time.Sleep(time.Millisecond) // slower than the publisher
			if o.N%500 == 7 && failed[o.N] < 3 {
				failed[o.N]++ // three failures, then success on the fourth attempt
				return errors.New("try again")
			}
			handled = append(handled, o.N)
			return nil
		}, topic.Follow[fOrder](), topic.Name[fOrder]("handler"),
			topic.Retry[fOrder](topic.RetryPolicy{Attempts: 5, Base: 10 * time.Millisecond}))
		var received []int
		done := make(chan struct{})
		go func() {
			for o := range ch {
				received = append(received, o.N)
				time.Sleep(time.Millisecond)
			}
			close(done)
		}()
		for n := range 3000 {
			b.Publish(fOrder{n})
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done
		want := make([]int, 3000)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(handled, want) {
			var missing []int
			for _, n := range want {
				if !slices.Contains(handled, n) {
					missing = append(missing, n)
				}
			}
			t.Errorf("the handler handled %d values, want all 3000 in order; missing %v; stats %+v", len(handled), missing, b.Subscriptions())
		}
		// The channel follower is closed by Shutdown, like any channel: it
		// received a prefix, in order, and what it had not read is still
		// in the log.
		if !slices.Equal(received, want[:len(received)]) {
			t.Errorf("the channel follower received %d values out of order", len(received))
		}
		for _, st := range b.Subscriptions() {
			if st.Lost.Total() != 0 {
				t.Errorf("%s lost %+v", st.Name, st.Lost)
			}
		}
	})
}

// A follower that falls behind retention jumps to the oldest value kept and
// learns exactly how many it missed, where they are missing: in the
// Skipped field of the first record after the gap, in its Lost.Skipped,
// and from its OnLoss function, with the first offset missed.
func TestAFollowerBehindRetentionIsToldWhatItSkipped(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	b.Retain[fOrder](topic.Retention{Count: 4})
	var losses []topic.Loss[fOrder]
	f := b.Follow(topic.Name[fOrder]("slow"), topic.Replay[fOrder](topic.Earliest()),
		topic.OnLoss(func(l topic.Loss[fOrder]) { losses = append(losses, l) }))
	defer f.Close()
	for n := range 10 {
		b.Publish(fOrder{n}) // 0 to 5 are trimmed
	}
	recs := fReadAll(f, 2)
	if got := fOffsets(recs); !slices.Equal(got, fSeq(6, 10)) {
		t.Fatalf("read offsets %v, want 6 to 9", got)
	}
	if recs[0].Skipped != 6 || recs[1].Skipped != 0 {
		t.Errorf("Skipped fields %d, %d; want 6 on the first record after the gap, then 0", recs[0].Skipped, recs[1].Skipped)
	}
	if len(losses) != 1 || losses[0].Cause != topic.Skipped || losses[0].Offset != 0 || losses[0].Count != 6 {
		t.Errorf("OnLoss got %+v, want one Skipped run from offset 0, 6 long", losses)
	}
	st := b.Subscriptions()[0]
	if st.Lost != (topic.Lost{Skipped: 6}) || st.Follower == nil || st.Follower.Offset != 10 || st.Follower.Lag != 0 {
		t.Errorf("stats %+v follower %+v, want 6 Skipped at offset 10", st.Lost, st.Follower)
	}
	// Read and a replay starting below the oldest kept say the same.
	if _, next, skipped := b.Read[fOrder](2, 10); skipped != 4 || next != 10 {
		t.Errorf("Read(2) next %d skipped %d, want 10 and 4", next, skipped)
	}
}

// Seek moves a live follower, from its own goroutine or another: back to a
// kept offset (read again), below the oldest kept (skipped and told), past
// the end (it waits for it), by its name through the broker.
func TestSeekMovesAFollower(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 8})
		for n := range 12 {
			b.Publish(fOrder{n}) // 4 to 11 kept
		}
		f := b.Follow(topic.Name[fOrder]("f"), topic.Replay[fOrder](topic.Earliest()))
		defer f.Close()
		fReadAll(f, 100)

		f.Seek(9)
		if got := fOffsets(fReadAll(f, 100)); !slices.Equal(got, fSeq(9, 12)) {
			t.Errorf("after Seek(9): %v", got)
		}
		f.Seek(1)
		recs := fReadAll(f, 100)
		if got := fOffsets(recs); !slices.Equal(got, fSeq(4, 12)) || recs[0].Skipped != 3 {
			t.Errorf("after Seek(1): %v, first skipped %d; want 4 to 11, 3 skipped", got, recs[0].Skipped)
		}
		// Past the end: Next waits for offset 14; another goroutine seeks
		// it back meanwhile.
		got := make(chan topic.Record[fOrder], 1)
		f.Seek(14)
		go func() {
			r, err := f.Next(context.Background())
			if err != nil {
				t.Error(err)
			}
			got <- r
		}()
		synctest.Wait()
		b.Publish(fOrder{12}) // offset 12: not 14
		synctest.Wait()
		select {
		case r := <-got:
			t.Fatalf("read %+v before offset 14 was published", r)
		default:
		}
		if !b.Seek[fOrder]("f", 5) {
			t.Fatal("Seek by name: no live follower named f")
		}
		if r := <-got; r.Offset != 5 {
			t.Errorf("after a Seek by name from another goroutine: offset %d, want 5", r.Offset)
		}
		if b.Seek[fOrder]("nobody", 0) {
			t.Error("Seek of a name with no live follower reported one")
		}
	})
}

// A follower's start At(o) and Seek(o) follow one rule: an offset no
// longer kept is skipped to the oldest kept and told as Skipped, counted; an
// offset not yet given is waited for, and nothing before it is read.
func TestAFollowerStartsAtAnOffsetByTheRulesOfSeek(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 10})
		for n := range 100 {
			b.Publish(fOrder{n}) // 90 to 99 kept
		}
		below := b.Follow(topic.Name[fOrder]("below"), topic.Replay[fOrder](topic.At(0)))
		defer below.Close()
		recs := fReadAll(below, 100)
		if got := fOffsets(recs); !slices.Equal(got, fSeq(90, 100)) || recs[0].Skipped != 90 {
			t.Errorf("At(0): read %v, first skipped %d; want 90 to 99, 90 skipped", got, recs[0].Skipped)
		}
		seeked := b.Follow(topic.Name[fOrder]("seeked"), topic.Replay[fOrder](topic.Earliest()))
		defer seeked.Close()
		seeked.Seek(0)
		if recs := fReadAll(seeked, 100); recs[0].Skipped != 90 {
			t.Errorf("Seek(0): first skipped %d; want 90, as At(0)", recs[0].Skipped)
		}
		for _, name := range []string{"below", "seeked"} {
			if st := hStats(t, &b, name); st.Lost.Skipped != 90 {
				t.Errorf("%s: Lost.Skipped %d; want 90", name, st.Lost.Skipped)
			}
		}

		past := b.Follow(topic.Replay[fOrder](topic.At(105)))
		defer past.Close()
		if n := past.Read(make([]topic.Record[fOrder], 10)); n != 0 {
			t.Errorf("At(105) with 100 published read %d records; want none before 105", n)
		}
		for n := 100; n < 106; n++ {
			b.Publish(fOrder{n})
		}
		if got := fOffsets(fReadAll(past, 100)); !slices.Equal(got, fSeq(105, 106)) {
			t.Errorf("At(105): read %v; want [105]", got)
		}
	})
}

// A named follower commits; started again under its name once closed, it
// resumes after its last commit, whatever its Replay says; two live
// followers cannot share a name.
func TestANamedFollowerResumesAfterItsLastCommit(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	retainOrders(&b, 10)
	f := b.Follow(topic.Name[fOrder]("billing"), topic.Replay[fOrder](topic.Earliest()))
	recs := fReadAll(f, 4)
	f.Commit(recs[5].Offset) // handled up to 5
	f.Commit(2)              // below: does nothing
	if o, ok := f.Committed(); o != 5 || !ok {
		t.Errorf("Committed = %d, %v; want 5", o, ok)
	}
	msg, panicked := panicMessage(func() { b.Follow(topic.Name[fOrder]("billing")) })
	if !panicked || !strings.HasPrefix(msg, "topic: ") || !strings.Contains(msg, "billing") {
		t.Errorf("a second live follower named billing: panicked %v with %q", panicked, msg)
	}
	msg, panicked = panicMessage(func() { f.Commit(10) })
	if !panicked || !strings.HasPrefix(msg, "topic: ") {
		t.Errorf("Commit of an offset never read: panicked %v with %q", panicked, msg)
	}
	f.Close()
	f.Close()

	again := b.Follow(topic.Name[fOrder]("billing"), topic.Replay[fOrder](topic.Last(1)))
	defer again.Close()
	if got := fOffsets(fReadAll(again, 100)); !slices.Equal(got, fSeq(6, 10)) {
		t.Errorf("resumed at %v, want 6 to 9", got)
	}
	// Another name starts where its Replay says.
	other := b.Follow(topic.Name[fOrder]("audit"), topic.Replay[fOrder](topic.Last(1)))
	defer other.Close()
	if got := fOffsets(fReadAll(other, 100)); !slices.Equal(got, []uint64{9}) {
		t.Errorf("a new name started at %v, want [9]", got)
	}
}

// A name with nothing committed under it keeps where its first follower
// started: one started again under it, whatever its Replay, reads what was
// published after that start, including what the first read and did not
// commit, and what came while none was live; nothing is passed over.
func TestANamedFollowerThatCommittedNothingRestartsWhereItsNameStarted(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	retainOrders(&b, 3) // 0, 1, 2 before the name
	f := b.Follow(topic.Name[fOrder]("billing"))
	b.Publish(fOrder{3})
	b.Publish(fOrder{4})
	if got := fOffsets(fReadAll(f, 100)); !slices.Equal(got, fSeq(3, 5)) {
		t.Fatalf("first follower read %v, want 3 4", got)
	}
	f.Close() // nothing committed
	b.Publish(fOrder{5})

	again := b.Follow(topic.Name[fOrder]("billing"), topic.Replay[fOrder](topic.Last(1)))
	if got := fOffsets(fReadAll(again, 100)); !slices.Equal(got, fSeq(3, 6)) {
		t.Errorf("started again at %v, want 3 to 5", got)
	}
	again.Commit(3)
	again.Close()
	third := b.Follow(topic.Name[fOrder]("billing"), topic.Replay[fOrder](topic.Earliest()))
	defer third.Close()
	if got := fOffsets(fReadAll(third, 100)); !slices.Equal(got, fSeq(4, 6)) {
		t.Errorf("after a commit of 3, started again at %v, want 4 5", got)
	}
}

// Pull with commit is at least once: what was read and not committed within
// AckWait is read again by the next read, from after the last commit.
func TestPulledAndNotCommittedIsReadAgainAfterAckWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		retainOrders(&b, 6)
		f := b.Follow(topic.Name[fOrder]("worker"), topic.Replay[fOrder](topic.Earliest()),
			topic.AckWait[fOrder](time.Minute))
		defer f.Close()
		buf := make([]topic.Record[fOrder], 3)
		f.Read(buf)
		f.Commit(1) // 2 read, not committed
		f.Read(buf) // 3 to 5
		time.Sleep(30 * time.Second)
		if n := f.Read(buf); n != 0 {
			t.Errorf("read %d before AckWait passed", n)
		}
		time.Sleep(31 * time.Second)
		n := f.Read(buf)
		if got := fOffsets(buf[:n]); !slices.Equal(got, []uint64{2, 3, 4}) {
			t.Errorf("after AckWait: read %v, want 2 3 4 again", got)
		}
		f.Commit(5 - 1)
		f.Read(buf)
		f.Commit(5)
		time.Sleep(2 * time.Minute)
		if n := f.Read(buf); n != 0 {
			t.Errorf("read %d again though everything was committed", n)
		}
	})
}

// Bad input: each has its documented outcome.
func TestFollowerBadInput(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	b.Retain[fOrder](topic.Retention{Count: 10})
	wantPanic := func(what string, f func()) {
		t.Helper()
		msg, panicked := panicMessage(f)
		if !panicked || !strings.HasPrefix(msg, "topic: ") {
			t.Errorf("%s: panicked %v with %q, want a topic: panic", what, panicked, msg)
		}
	}
	for what, f := range map[string]func(){
		"topic: Follow of int: int is not retained (declare it first with Broker.Retain or Broker.RetainLatest)":                           func() { b.Follow[int]() },
		"topic: Subscribe with the Follow option of int: int is not retained (declare it first with Broker.Retain or Broker.RetainLatest)": func() { b.Subscribe(topic.Follow[int]()) },
	} {
		if msg, _ := panicMessage(f); msg != what {
			t.Errorf("a follower of a type not retained panicked with %q; want %q", msg, what)
		}
	}
	wantPanic("From on a follower", func() {
		b.Subscribe(topic.Follow[fOrder](), topic.From(func(n int) (fOrder, bool) { return fOrder{n}, true }))
	})
	wantPanic("Overflow on a follower", func() { b.Follow(topic.Overflow[fOrder](topic.DropOldest)) })
	wantPanic("AckWait without a Name", func() { b.Follow(topic.AckWait[fOrder](time.Second)) })
	wantPanic("Buffer on Follow", func() { b.Follow(topic.Buffer[fOrder](4)) })
	wantPanic("Retry on Follow", func() { b.Follow(topic.Retry[fOrder](topic.RetryPolicy{Attempts: 2})) })
	wantPanic("Commit of nothing read", func() {
		f := b.Follow[fOrder]()
		defer f.Close()
		f.Commit(0)
	})
	if n := len(b.Subscriptions()); n != 0 {
		t.Errorf("%d subscriptions left by the rejected calls", n)
	}

	// A closed follower: reads nothing, Next says so, Seek does nothing.
	f := b.Follow[fOrder]()
	f.Close()
	b.Publish(fOrder{1})
	if n := f.Read(make([]topic.Record[fOrder], 4)); n != 0 {
		t.Errorf("a closed follower read %d", n)
	}
	if _, err := f.Next(context.Background()); err != topic.ErrClosed {
		t.Errorf("Next on a closed follower = %v, want ErrClosed", err)
	}
	f.Seek(0)
	if err := f.Wait(context.Background()); err != topic.ErrClosed {
		t.Errorf("Wait on a closed follower = %v", err)
	}
}

// Shutdown drains handler followers until they have caught up with the log,
// closes channel and pull followers, and counts what is published after as
// Closed on each of them.
func TestShutdownDrainsFollowers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 100})
		handled := 0
		b.Handle(func(context.Context, fOrder) error {
			time.Sleep(time.Second)
			handled++
			return nil
		}, topic.Follow[fOrder](), topic.Name[fOrder]("handler"))
		ch, _ := b.Subscribe(topic.Follow[fOrder](), topic.Name[fOrder]("channel"), topic.Buffer[fOrder](64))
		pull := b.Follow(topic.Name[fOrder]("pull"))
		next := make(chan error, 1)
		go func() {
			fReadAll(pull, 100)
			for {
				if _, err := pull.Next(context.Background()); err != nil {
					next <- err
					return
				}
			}
		}()
		for n := range 10 {
			b.Publish(fOrder{n})
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if handled != 10 {
			t.Errorf("the handler follower handled %d of 10 before Shutdown returned", handled)
		}
		if got := len(takeAll(ch)); got != 10 {
			t.Errorf("the channel follower holds %d of 10", got)
		}
		if _, ok := <-ch; ok {
			t.Error("the channel follower is open after Shutdown")
		}
		if err := <-next; err != topic.ErrClosed {
			t.Errorf("the pull follower's Next = %v, want ErrClosed", err)
		}
		b.Publish(fOrder{10})
		for _, st := range b.Subscriptions() {
			if st.Lost != (topic.Lost{Closed: 1}) {
				t.Errorf("%s: lost %+v after a publication after Shutdown, want 1 Closed", st.Name, st.Lost)
			}
		}
	})
}

// Followers read while publishers publish and others seek and commit: each
// reads a gapless, duplicate-free run of offsets between its seeks, and what
// it misses is exactly what it was told it skipped.
func TestFollowersUnderConcurrentPublishersSeeksAndTrims(t *testing.T) {
	t.Parallel()
	const publishers, perPublisher, keep = 4, 5000, 64
	var b topic.Broker
	b.Retain[fOrder](topic.Retention{Count: keep})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	type result struct {
		name    string
		recs    []topic.Record[fOrder]
		skipped uint64
	}
	results := make(chan result, 8)
	for i := range 4 {
		name := fmt.Sprint("f", i)
		f := b.Follow(topic.Name[fOrder](name), topic.Replay[fOrder](topic.Earliest()))
		wg.Go(func() {
			defer f.Close()
			var r result
			r.name = name
			buf := make([]topic.Record[fOrder], 1+i*7)
			for {
				n := f.Read(buf)
				for _, rec := range buf[:n] {
					r.skipped += rec.Skipped
				}
				r.recs = append(r.recs, buf[:n]...)
				if n > 0 {
					f.Commit(buf[n-1].Offset)
				}
				if n == 0 {
					select {
					case <-stop:
						if f.Offset() == uint64(publishers*perPublisher) {
							results <- r
							return
						}
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					f.Wait(ctx)
					cancel()
				}
			}
		})
	}
	var pubs sync.WaitGroup
	for range publishers {
		pubs.Go(func() {
			for n := range perPublisher {
				b.Publish(fOrder{n})
			}
		})
	}
	pubs.Wait()
	close(stop)
	wg.Wait()
	close(results)
	for r := range results {
		// Offsets read strictly increase, and every gap is what the next
		// record says was skipped.
		prev := int64(-1)
		for _, rec := range r.recs {
			if gap := int64(rec.Offset) - prev - 1; gap != int64(rec.Skipped) {
				t.Errorf("%s: offset %d after %d, told %d skipped", r.name, rec.Offset, prev, rec.Skipped)
				break
			}
			prev = int64(rec.Offset)
		}
		if uint64(len(r.recs))+r.skipped != publishers*perPublisher {
			t.Errorf("%s: read %d and skipped %d of %d", r.name, len(r.recs), r.skipped, publishers*perPublisher)
		}
	}
	for _, st := range b.Subscriptions() {
		t.Errorf("%s still listed after Close", st.Name)
	}
}

// Broker.Follow of a Record type panics, and leaves no follower registered
// that no one can close.
func TestFollowOfARecordTypeLeavesNothing(t *testing.T) {
	var b topic.Broker
	b.Retain[fOrder](topic.Retention{Count: 10})
	msg, panicked := panicMessage(func() {
		b.Follow(topic.Name[topic.Record[fOrder]]("r"))
	})
	if !panicked || !strings.HasPrefix(msg, "topic: Follow of topic.Record[") {
		t.Errorf("Follow[Record[fOrder]]: panicked %v: %q, want a topic: panic naming the record type", panicked, msg)
	}
	if n := len(b.Subscriptions()); n != 0 {
		t.Errorf("%d subscriptions listed after the Follow of a record type", n)
	}
	// the name must be free
	msg2, p2 := panicMessage(func() {
		f := b.Follow(topic.Name[fOrder]("r"))
		f.Close()
	})
	if p2 {
		t.Errorf("name still live: %s", msg2)
	}
}

// Commit panics for an offset the follower has not read, does nothing
// below what it committed, and a follower started again under the name
// resumes after the last commit; Seek by name moves it, and a second live
// follower of the name panics.
func TestFollowCommitTakesOnlyWhatWasReadAndResumesAfterIt(t *testing.T) {
	var b topic.Broker
	retainOrders(&b, 10)
	f := b.Follow(topic.Name[fOrder]("c"), topic.Replay[fOrder](topic.At(5)))
	if _, p := panicMessage(func() { f.Commit(5) }); !p {
		t.Error("commit of an unread offset did not panic")
	}
	buf := make([]topic.Record[fOrder], 2)
	f.Read(buf) // 5, 6
	if _, p := panicMessage(func() { f.Commit(7) }); !p {
		t.Error("commit of 7 did not panic")
	}
	if _, p := panicMessage(func() { f.Commit(2) }); !p {
		t.Log("commit of 2, never read (below the start), did not panic")
	}
	f.Commit(6)
	f.Commit(5)
	if c, ok := f.Committed(); c != 6 || !ok {
		t.Errorf("committed %d %v", c, ok)
	}
	f.Close()
	g := b.Follow(topic.Name[fOrder]("c"), topic.Replay[fOrder](topic.Earliest()))
	defer g.Close()
	if got := fOffsets(fReadAll(g, 3)); !slices.Equal(got, fSeq(7, 10)) {
		t.Errorf("resumed at %v", got)
	}
	if !b.Seek[fOrder]("c", 2) {
		t.Error("Seek by name found none")
	}
	if got := fOffsets(fReadAll(g, 3)); !slices.Equal(got, fSeq(2, 10)) {
		t.Errorf("after Seek(2): %v", got)
	}
	if _, p := panicMessage(func() { b.Follow(topic.Name[fOrder]("c")) }); !p {
		t.Error("a second live name did not panic")
	}
	if n := len(b.Subscriptions()); n != 1 {
		t.Errorf("%d subscriptions", n)
	}
}

// Close frees the name "with its committed offset kept". A late Commit
// through the closed follower must not move the offset of the name, which
// another follower now holds: the next follower under the name would skip
// what the live one never handled.
func TestFollowCommitAfterCloseLeavesTheNameAlone(t *testing.T) {
	var b topic.Broker
	b.Retain[fVal](topic.Retention{Count: 100})
	for n := range 10 {
		b.Publish(fVal{n})
	}
	f1 := b.Follow(topic.Name[fVal]("n"), topic.Replay[fVal](topic.Earliest()))
	readAllOf(f1, 10) // 0 to 9, not committed
	f1.Close()
	f2 := b.Follow(topic.Name[fVal]("n"), topic.Replay[fVal](topic.Earliest()))
	buf := make([]topic.Record[fVal], 5)
	f2.Read(buf) // 0 to 4
	f2.Commit(4)
	_, p := panicMessage(func() { f1.Commit(9) }) // late, through the closed follower
	f2.Close()
	f3 := b.Follow(topic.Name[fVal]("n"))
	defer f3.Close()
	if got := recordOffsets(readAllOf(f3, 10)); !slices.Equal(got, offsetRange(5, 10)) {
		t.Errorf("the name resumed with %v, want 5 to 9 (f2 committed 4; f1 was closed; its Commit panicked: %v)", got, p)
	}
}

// Commit panics for an offset the follower has not reached, and takes one
// it passed over by a Seek forward, as a commit after it would have.
func TestFollowCommitAfterASeekForward(t *testing.T) {
	var b topic.Broker
	b.Retain[fVal](topic.Retention{Count: 100})
	for i := range 10 {
		b.Publish(fVal{i})
	}
	f := b.Follow(topic.Name[fVal]("s"), topic.Replay[fVal](topic.Earliest()))
	f.Seek(7)
	buf := make([]topic.Record[fVal], 2)
	if n := f.Read(buf); n != 2 || buf[0].Offset != 7 {
		t.Fatalf("Read: %d from %d, want 2 from 7", n, buf[0].Offset)
	}
	if _, p := panicMessage(func() { f.Commit(9) }); !p {
		t.Error("Commit(9), which the follower has not reached, did not panic")
	}
	if msg, p := panicMessage(func() { f.Commit(2) }); p {
		t.Errorf("Commit(2), passed over by the Seek: %s", msg)
	}
	f.Close()
	again := b.Follow(topic.Name[fVal]("s"))
	defer again.Close()
	if again.Offset() != 3 {
		t.Errorf("resumed at %d, want 3, after the commit of 2", again.Offset())
	}
}

// Close wakes every goroutine waiting on the follower, even two at once
// (Wait and Next from two goroutines, which the Follower's doc does not
// allow: what it does is still defined).
func TestFollowCloseWakesEveryWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 4})
		f := b.Follow[fVal]()
		var wg sync.WaitGroup
		errs := make([]error, 3)
		wg.Go(func() { errs[0] = f.Wait(context.Background()) })
		wg.Go(func() { _, errs[1] = f.Next(context.Background()) })
		wg.Go(func() { errs[2] = f.Wait(context.Background()) })
		synctest.Wait()
		f.Close()
		wg.Wait()
		for i, err := range errs {
			if err != topic.ErrClosed {
				t.Errorf("waiter %d: %v, want ErrClosed", i, err)
			}
		}
	})
}

// A pull follower's OnLoss runs on the goroutine that reads; calls back into
// the follower and the broker from there (Seek, Commit, Subscriptions,
// Follow, Close, Shutdown) return.
func TestFollowPullFollowersOnLossMayCallBack(t *testing.T) {
	for _, what := range []string{"Seek", "Commit", "Follow", "Subscriptions", "Close", "Shutdown"} {
		t.Run(what, func(t *testing.T) {
			var b topic.Broker
			b.Retain[fVal](topic.Retention{Count: 2})
			var f *topic.Follower[fVal]
			var inside atomic.Int32
			f = b.Follow(topic.Name[fVal]("p"), topic.Replay[fVal](topic.Earliest()), topic.OnLoss(func(l topic.Loss[fVal]) {
				if l.Cause != topic.Skipped || inside.Add(1) != 1 {
					return
				}
				switch what {
				case "Seek":
					f.Seek(0)
					b.Seek[fVal]("p", 0)
				case "Commit":
					f.Commit(0)
				case "Follow":
					g := b.Follow[fVal]()
					g.Close()
				case "Subscriptions":
					b.Subscriptions()
				case "Close":
					f.Close()
				case "Shutdown":
					b.Shutdown(context.Background())
				}
			}))
			b.Publish(fVal{0})
			buf := make([]topic.Record[fVal], 1)
			f.Read(buf)
			for n := 1; n <= 10; n++ {
				b.Publish(fVal{n})
			}
			fWithin(t, 10*time.Second, what+" from OnLoss", func() {
				readAllOf(f, 4)
				f.Close()
				b.Shutdown(context.Background())
			})
			if g := b.Goroutines(); g != 0 {
				t.Errorf("%d goroutines after Shutdown", g)
			}
		})
	}
}

// Shutdown ends the log with the broker: what a follower had not read by
// then is lost, and counted. A pull follower and a channel follower count it
// Closed; a handler follower whose Shutdown was cut short counts it
// Discarded, as a plain handler counts its queue. For each, what it
// received and what it counted make up what was published.
func TestShutdownCountsWhatEveryFollowerHadNotRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 1000})
		pull := b.Follow(topic.Name[fOrder]("pull"))
		ch, _ := b.Subscribe(topic.Follow[fOrder](), topic.Buffer[fOrder](10), topic.Name[fOrder]("channel"))
		var handled atomic.Uint64
		b.Handle(func(ctx context.Context, o fOrder) error {
			if handled.Load() == 10 {
				<-ctx.Done() // until Shutdown is cut short
				return ctx.Err()
			}
			handled.Add(1)
			return nil
		}, topic.Follow[fOrder](), topic.Name[fOrder]("handler"))
		for i := range n {
			b.Publish(fOrder{i})
		}
		synctest.Wait()
		pulled := uint64(pull.Read(make([]topic.Record[fOrder], 10)))

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err == nil {
			t.Fatal("Shutdown returned nil; want its context's error, the handler holding the drain")
		}
		received := uint64(len(takeAll(ch)))
		synctest.Wait() // the handler's worker ends
		for name, got := range map[string]uint64{"pull": pulled, "channel": received, "handler": handled.Load()} {
			st := hStats(t, &b, name)
			if got+st.Lost.Total() != n {
				t.Errorf("%s: received %d and lost %+v; want them to add up to %d", name, got, st.Lost, n)
			}
			if st.Follower.Lag != 0 {
				t.Errorf("%s: lag %d after Shutdown; want it counted as lost", name, st.Follower.Lag)
			}
			cause := st.Lost.Closed
			if name == "handler" {
				cause = st.Lost.Discarded
			}
			if cause != st.Lost.Total() {
				t.Errorf("%s: lost %+v; want only Closed (Discarded for a handler)", name, st.Lost)
			}
		}
	})
}

// What a follower lost at Shutdown is counted from where the log stood
// then: the counts do not change after, though the age bound goes on
// trimming; and what retention had trimmed before the follower reached it
// is counted Skipped, the rest Closed.
func TestAFollowersCountsAtShutdownStayFinal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 10, Age: time.Minute})
		f := b.Follow(topic.Name[fOrder]("slow"))
		for i := range 30 {
			b.Publish(fOrder{i}) // 20 to 29 kept: 20 trimmed before it read them
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		first := hStats(t, &b, "slow")
		time.Sleep(2 * time.Minute) // every value kept has aged out since
		again := hStats(t, &b, "slow")
		want := topic.Lost{Skipped: 20, Closed: 10}
		if first.Lost != want || again.Lost != want {
			t.Errorf("lost %+v at Shutdown, %+v two minutes later; want %+v both times", first.Lost, again.Lost, want)
		}
		if n := f.Read(make([]topic.Record[fOrder], 10)); n != 0 {
			t.Errorf("a follower closed by Shutdown read %d records", n)
		}
	})
}

// Shutdown: what is published after it is counted Closed on each follower,
// of T and of Record[T], pull, channel and handler.
func TestFollowShutdownCountsClosedOnEveryFollower(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 100})
		var onLoss atomic.Int64
		ol := func(l topic.Loss[fOrder]) {
			if l.Cause == topic.Closed {
				onLoss.Add(1)
			}
		}
		olr := func(l topic.Loss[topic.Record[fOrder]]) {
			if l.Cause == topic.Closed {
				onLoss.Add(1)
			}
		}
		b.Follow(topic.Name[fOrder]("pull"), topic.OnLoss(ol))
		b.Subscribe(topic.Follow[fOrder](), topic.Name[fOrder]("ch"), topic.OnLoss(ol))
		b.Subscribe(topic.Follow[topic.Record[fOrder]](), topic.Name[topic.Record[fOrder]]("chrec"), topic.OnLoss(olr))
		b.Handle(func(context.Context, fOrder) error { return nil }, topic.Follow[fOrder](), topic.Name[fOrder]("h"), topic.OnLoss(ol))
		b.Handle(func(context.Context, topic.Record[fOrder]) error { return nil }, topic.Follow[topic.Record[fOrder]](), topic.Name[topic.Record[fOrder]]("hrec"), topic.OnLoss(olr))
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.Publish(fOrder{1})
		b.Append(fOrder{2})
		synctest.Wait()
		subs := b.Subscriptions()
		if len(subs) != 5 {
			t.Errorf("%d subscriptions after Shutdown, want 5", len(subs))
		}
		for _, st := range subs {
			if st.Lost.Closed != 2 || st.Lost.Total() != 2 {
				t.Errorf("%s: lost %+v, want Closed 2", st.Name, st.Lost)
			}
		}
		if onLoss.Load() != 10 {
			t.Errorf("OnLoss told %d Closed, want 10", onLoss.Load())
		}
	})
}
