package topic_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

// fOrder is the retained type of the follower tests.
type fOrder struct{ N int }

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

// A named follower commits; started again under its name once closed, it
// resumes after its last commit, whatever its Replay says; two live
// followers cannot share a name.
func TestANamedFollowerResumesAfterItsLastCommit(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	b.Retain[fOrder](topic.Retention{Count: 100})
	for n := range 10 {
		b.Publish(fOrder{n})
	}
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

// Pull with commit is at least once: what was read and not committed within
// AckWait is read again by the next read, from after the last commit.
func TestPulledAndNotCommittedIsReadAgainAfterAckWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 100})
		for n := range 6 {
			b.Publish(fOrder{n})
		}
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
	wantPanic("Follow of a type not retained", func() { b.Follow[int]() })
	wantPanic("Subscribe with Follow of a type not retained", func() { b.Subscribe(topic.Follow[int]()) })
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
