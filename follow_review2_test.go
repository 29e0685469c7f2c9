package topic_test

// Adversarial review of the followers (a helper's, 2026-12-03): a re-read
// AckWait has made due wakes Wait and Next; values that all aged out are
// skipped by a waiting follower, so they hold neither Shutdown nor Settle
// and count in no lag; Commit after a Seek forward; AckWait's re-read of
// trimmed values; Close wakes every goroutine waiting on a follower.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

// Wait "returns once a record can be read": with AckWait, a record read and
// not committed can be read again once AckWait has passed, with nothing
// published since.
func TestFollowAckWaitWaitReturnsWhenAReReadIsDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[frVal](topic.Retention{Count: 10})
		f := b.Follow(topic.Name[frVal]("w"), topic.AckWait[frVal](10*time.Millisecond))
		defer f.Close()
		b.Publish(frVal{1})
		buf := make([]topic.Record[frVal], 4)
		if n := f.Read(buf); n != 1 {
			t.Fatalf("first Read read %d records, want 1", n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		if err := f.Wait(ctx); err != nil {
			t.Fatalf("Wait: %v after %v, with offset 0 due to be read again after 10ms", err, time.Since(start))
		}
		if waited := time.Since(start); waited < 10*time.Millisecond || waited > 11*time.Millisecond {
			t.Errorf("Wait returned after %v, want AckWait, 10ms (within a 64th)", waited)
		}
		if n := f.Read(buf); n != 1 || buf[0].Offset != 0 || buf[0].Skipped != 0 {
			t.Errorf("Read after Wait: %d records, the first %+v; want offset 0 again", n, buf[0])
		}
	})
}

// Next waits for the next record, and with AckWait the next record of a
// follower that did not commit is the one it read, once AckWait passed.
func TestFollowAckWaitNextReturnsTheReRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[frVal](topic.Retention{Count: 10})
		f := b.Follow(topic.Name[frVal]("w"), topic.AckWait[frVal](10*time.Millisecond))
		defer f.Close()
		b.Publish(frVal{1})
		if r, err := f.Next(context.Background()); err != nil || r.Offset != 0 {
			t.Fatalf("first Next: %+v, %v", r, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r, err := f.Next(ctx)
		if err != nil || r.Offset != 0 || r.Value != (frVal{1}) {
			t.Errorf("Next after AckWait: %+v, %v; want offset 0 again", r, err)
		}
		f.Commit(0)
		if r, err := f.Next(ctx); err != context.DeadlineExceeded {
			t.Errorf("Next after the commit: %+v, %v; want nothing until ctx ends", r, err)
		}
	})
}

// A handler follower moved by Broker.Seek onto values that have all aged
// out skips them, counted as Skipped, and then holds neither Settle nor
// Shutdown: it has read its log to the end. Real time, not a synctest
// bubble: a drain that never found the handler idle would keep the bubble
// busy, so its context could never end there.
func TestFollowSeekOntoAgedOutValuesSkipsThemAndDrains(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		for _, end := range []string{"Settle", "Shutdown"} {
			t.Run(fmt.Sprintf("keyed=%v/%s", keyed, end), func(t *testing.T) {
				var b topic.Broker
				r := topic.Retention{Count: 100, Age: 50 * time.Millisecond}
				if keyed {
					b.RetainLatest(func(v frVal) int { return v.N }, r)
				} else {
					b.Retain[frVal](r)
				}
				var handled, skipped atomic.Int64
				stop := b.Handle(func(context.Context, frVal) error {
					handled.Add(1)
					return nil
				}, topic.Follow[frVal](), topic.Name[frVal]("h"),
					topic.OnLoss(func(l topic.Loss[frVal]) { skipped.Add(int64(l.Count)) }))
				defer stop()
				for i := range 5 {
					b.Publish(frVal{i})
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := b.Settle(ctx); err != nil || handled.Load() != 5 {
					t.Fatalf("Settle: %v, with %d handled, want 5", err, handled.Load())
				}
				time.Sleep(120 * time.Millisecond) // all five past Age, nothing published since
				if !b.Seek[frVal]("h", 0) {
					t.Fatal("no live follower named h")
				}
				ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				var err error
				if end == "Settle" {
					err = b.Settle(ctx)
				} else {
					err = b.Shutdown(ctx)
				}
				if err != nil {
					t.Fatalf("%s: %v; the values at the follower's offset had all aged out", end, err)
				}
				want := int64(5) // a ring skips them, and tells
				if keyed {
					want = 0 // a keyed log skips nothing (see RetainLatest)
				}
				if handled.Load() != 5 || skipped.Load() != want {
					t.Errorf("handled %d, skipped %d; want 5 and %d", handled.Load(), skipped.Load(), want)
				}
				for _, s := range b.Subscriptions() {
					if s.Follower != nil && (s.Follower.Lag != 0 || s.Lost.Skipped != uint64(want)) {
						t.Errorf("%s: Lag %d, Lost.Skipped %d; want 0 and %d", s.Name, s.Follower.Lag, s.Lost.Skipped, want)
					}
				}
			})
		}
	}
}

// Values past the age bound are not kept: once they all are, a follower's
// lag and the log's stats count none, though nothing was published or read
// since.
func TestFollowLagAndLogsCountNothingOnceAllAgedOut(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				r := topic.Retention{Count: 100, Age: time.Second}
				if keyed {
					b.RetainLatest(func(v frVal) int { return v.N }, r)
				} else {
					b.Retain[frVal](r)
				}
				f := b.Follow(topic.Replay[frVal](topic.Earliest()))
				defer f.Close()
				for i := range 5 {
					b.Publish(frVal{i})
				}
				if lag := followerLag(t, &b); lag != 5 {
					t.Fatalf("Lag %d before the values aged out, want 5", lag)
				}
				time.Sleep(2 * time.Second)
				if lag := followerLag(t, &b); lag != 0 {
					t.Errorf("Lag %d once every value aged out, want 0", lag)
				}
				for _, st := range b.Logs() {
					if st.Kept != 0 || st.Next != 5 {
						t.Errorf("Logs: %+v; want Next 5 and nothing kept", st)
					}
				}
				// The follower is told when it reads: a ring's skipped values
				// are reported, a keyed log's are not (it skips nothing).
				if n := f.Read(make([]topic.Record[frVal], 8)); n != 0 {
					t.Errorf("Read read %d records of values past the age bound", n)
				}
				b.Publish(frVal{9})
				rec, err := f.Next(context.Background())
				want := uint64(5)
				if keyed {
					want = 0
				}
				if err != nil || rec.Offset != 5 || rec.Skipped != want {
					t.Errorf("Next: %+v, %v; want offset 5 with Skipped %d", rec, err, want)
				}
			})
		})
	}
}

func followerLag(t *testing.T, b *topic.Broker) uint64 {
	t.Helper()
	for _, s := range b.Subscriptions() {
		if s.Follower != nil {
			return s.Follower.Lag
		}
	}
	t.Fatal("no follower listed")
	return 0
}

// A follower that waits with values that all aged out skips them and
// reports them, and Wait does not return for them: no record can be read.
func TestFollowWaitSkipsAgedOutValuesWithoutReturning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[frVal](topic.Retention{Count: 100, Age: time.Second})
		var lost atomic.Uint64
		f := b.Follow(topic.Replay[frVal](topic.Earliest()), topic.OnLoss(func(l topic.Loss[frVal]) { lost.Add(l.Count) }))
		defer f.Close()
		for i := range 3 {
			b.Publish(frVal{i})
		}
		time.Sleep(2 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := f.Wait(ctx); err != context.DeadlineExceeded {
			t.Errorf("Wait: %v; want nothing to read until ctx ends", err)
		}
		if lost.Load() != 3 || f.Offset() != 3 {
			t.Errorf("skipped %d, at %d; want the 3 aged out skipped while waiting", lost.Load(), f.Offset())
		}
	})
}

// Commit panics for an offset the follower has not reached, and takes one
// it passed over by a Seek forward, as a commit after it would have.
func TestFollowCommitAfterASeekForward(t *testing.T) {
	var b topic.Broker
	b.Retain[frVal](topic.Retention{Count: 100})
	for i := range 10 {
		b.Publish(frVal{i})
	}
	f := b.Follow(topic.Name[frVal]("s"), topic.Replay[frVal](topic.Earliest()))
	f.Seek(7)
	buf := make([]topic.Record[frVal], 2)
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
	again := b.Follow(topic.Name[frVal]("s"))
	defer again.Close()
	if again.Offset() != 3 {
		t.Errorf("resumed at %d, want 3, after the commit of 2", again.Offset())
	}
}

// What was read and not committed, and trimmed before AckWait let it be read
// again, is reported as skipped: its re-read is lost, and at least once
// cannot hold for it.
func TestFollowAckWaitReportsTrimmedReReadsAsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[frVal](topic.Retention{Count: 4})
		var losses []topic.Loss[frVal]
		f := b.Follow(topic.Name[frVal]("a"), topic.AckWait[frVal](10*time.Millisecond),
			topic.OnLoss(func(l topic.Loss[frVal]) { losses = append(losses, l) }))
		defer f.Close()
		for i := range 4 {
			b.Publish(frVal{i})
		}
		buf := make([]topic.Record[frVal], 10)
		if n := f.Read(buf); n != 4 {
			t.Fatalf("Read read %d, want 4", n)
		}
		for i := 4; i < 8; i++ {
			b.Publish(frVal{i}) // trims 0..3, read and not committed
		}
		time.Sleep(20 * time.Millisecond)
		n := f.Read(buf)
		if n != 4 || buf[0].Offset != 4 || buf[0].Skipped != 4 || len(losses) != 1 || losses[0].Offset != 0 || losses[0].Count != 4 {
			t.Errorf("Read %d from %d, Skipped %d, OnLoss %+v; want 4 from 4, and 0..3 reported skipped", n, buf[0].Offset, buf[0].Skipped, losses)
		}
	})
}

// Close wakes every goroutine waiting on the follower, even two at once
// (Wait and Next from two goroutines, which the Follower's doc does not
// allow: what it does is still defined).
func TestFollowCloseWakesEveryWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[frVal](topic.Retention{Count: 4})
		f := b.Follow[frVal]()
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

// Wait returns once a re-read is due, but does not apply it: a commit
// after Wait returns still spares what it commits ("AckWait reads nothing
// up to o again").
func TestFollowAckWaitCommitAfterWaitSparesTheReRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[frVal](topic.Retention{Count: 10})
		f := b.Follow(topic.Name[frVal]("w"), topic.AckWait[frVal](10*time.Millisecond))
		defer f.Close()
		for i := range 5 {
			b.Publish(frVal{i})
		}
		buf := make([]topic.Record[frVal], 10)
		if n := f.Read(buf); n != 5 {
			t.Fatalf("Read read %d, want 5", n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := f.Wait(ctx); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		f.Commit(2)
		if n := f.Read(buf); n != 2 || buf[0].Offset != 3 {
			t.Errorf("Read after Commit(2) read %d records from %d; want 3 and 4 again", n, buf[0].Offset)
		}
		f.Commit(4)
		time.Sleep(time.Second)
		if n := f.Read(buf); n != 0 {
			t.Errorf("Read after Commit(4) read %d records from %d; want none", n, buf[0].Offset)
		}
	})
}
