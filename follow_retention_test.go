package topic_test

// Tests of followers meeting retention: values trimmed or aged out before
// a follower reached them are skipped and told, not carried across a Seek,
// not waited for by Wait and counted in no lag, and a follower moved onto
// them drains.

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

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
					b.RetainLatest(func(v fVal) int { return v.N }, r)
				} else {
					b.Retain[fVal](r)
				}
				var handled, skipped atomic.Int64
				stop := b.Handle(func(context.Context, fVal) error {
					handled.Add(1)
					return nil
				}, topic.Follow[fVal](), topic.Name[fVal]("h"),
					topic.OnLoss(func(l topic.Loss[fVal]) { skipped.Add(int64(l.Count)) }))
				defer stop()
				for i := range 5 {
					b.Publish(fVal{i})
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := b.Settle(ctx); err != nil || handled.Load() != 5 {
					t.Fatalf("Settle: %v, with %d handled, want 5", err, handled.Load())
				}
				time.Sleep(120 * time.Millisecond) // all five past Age, nothing published since
				if !b.Seek[fVal]("h", 0) {
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
					b.RetainLatest(func(v fVal) int { return v.N }, r)
				} else {
					b.Retain[fVal](r)
				}
				f := b.Follow(topic.Replay[fVal](topic.Earliest()))
				defer f.Close()
				for i := range 5 {
					b.Publish(fVal{i})
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
				if n := f.Read(make([]topic.Record[fVal], 8)); n != 0 {
					t.Errorf("Read read %d records of values past the age bound", n)
				}
				b.Publish(fVal{9})
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
		b.Retain[fVal](topic.Retention{Count: 100, Age: time.Second})
		var lost atomic.Uint64
		f := b.Follow(topic.Replay[fVal](topic.Earliest()), topic.OnLoss(func(l topic.Loss[fVal]) { lost.Add(l.Count) }))
		defer f.Close()
		for i := range 3 {
			b.Publish(fVal{i})
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

// Record.Skipped counts "the values just before it that retention trimmed
// before the follower reached them". Values trimmed before a Seek moved the
// follower elsewhere are not just before the record it reads there.
func TestFollowSkippedIsNotCarriedAcrossASeek(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 100, Age: time.Second})
		var told atomic.Uint64
		f := b.Follow(topic.Replay[fVal](topic.Earliest()), topic.OnLoss(func(l topic.Loss[fVal]) {
			if l.Cause == topic.Skipped {
				told.Add(l.Count)
			}
		}))
		defer f.Close()
		for n := range 5 {
			b.Publish(fVal{n})
		}
		time.Sleep(2 * time.Second) // 0 to 4 expire
		buf := make([]topic.Record[fVal], 4)
		if n := f.Read(buf); n != 0 {
			t.Fatalf("read %d expired values", n)
		}
		if told.Load() != 5 {
			t.Fatalf("told %d skipped, want 5", told.Load())
		}
		f.Seek(7)
		for n := 5; n < 8; n++ {
			b.Publish(fVal{n}) // 5, 6, 7: fresh
		}
		n := f.Read(buf)
		if n != 1 || buf[0].Offset != 7 {
			t.Fatalf("read %v, want [7]", recordOffsets(buf[:n]))
		}
		if buf[0].Skipped != 0 {
			t.Errorf("record 7 has Skipped %d; 5 and 6, just before it, were kept (it was moved past them)", buf[0].Skipped)
		}
	})
}

// Wait "returns once a record can be read". A value kept by Count but past
// Age cannot be read: Wait must not return nil only for Read to find
// nothing.
func TestFollowWaitReturnsOnlyWhenARecordCanBeRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 100, Age: time.Second})
		f := b.Follow[fVal]()
		defer f.Close()
		b.Publish(fVal{0})
		time.Sleep(2 * time.Second) // expired, not trimmed: no publication since
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := f.Wait(ctx)
		n := f.Read(make([]topic.Record[fVal], 4))
		if err == nil && n == 0 {
			t.Errorf("Wait returned nil, then Read read nothing (the one value had expired)")
		}
	})
}
