package topic_test

// Tests of AckWait on followers of ring logs: what a named follower has
// read and not committed for AckWait is read again, by Read, Next and
// Wait, and again if the re-read is not committed either; commits and
// Seeks during and racing a re-read are honoured; what retention trimmed
// before a re-read is told as skipped, once; Close ends every wait. The
// tests run on fake clocks (testing/synctest) where time decides, and the
// races in real time, bounded.

import (
	"context"
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

// A durable follower with AckWait that started at Next and committed
// nothing must read again what it read, not what was published before it
// started.
func TestFollowAckWaitWithoutCommitRereadsOnlyWhatWasRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 5})
		for n := range 20 {
			b.Publish(fOrder{n})
		}
		var skips []topic.Loss[fOrder]
		f := b.Follow(topic.Name[fOrder]("w"), topic.AckWait[fOrder](time.Minute),
			topic.OnLoss(func(l topic.Loss[fOrder]) { skips = append(skips, l) }))
		defer f.Close()
		for n := 20; n < 23; n++ {
			b.Publish(fOrder{n})
		}
		buf := make([]topic.Record[fOrder], 10)
		if got := fOffsets(buf[:f.Read(buf)]); !slices.Equal(got, []uint64{20, 21, 22}) {
			t.Fatalf("first read %v", got)
		}
		time.Sleep(61 * time.Second)
		n := f.Read(buf)
		got := fOffsets(buf[:n])
		if !slices.Equal(got, []uint64{20, 21, 22}) || (n > 0 && buf[0].Skipped != 0) || len(skips) != 0 {
			sk := uint64(0)
			if n > 0 {
				sk = buf[0].Skipped
			}
			t.Errorf("after AckWait read %v (Skipped %d, OnLoss %+v), want 20 21 22 again, nothing skipped", got, sk, skips)
		}
	})
}

// AckWait reads again "what it has read and not committed for d". A value
// read later than the first one, which is then committed, has not been
// uncommitted for d: it must not be read again yet.
func TestFollowAckWaitTimerFollowsTheFirstUncommittedValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 100})
		for n := range 5 {
			b.Publish(fVal{n})
		}
		f := b.Follow(topic.Name[fVal]("w"), topic.Replay[fVal](topic.Earliest()),
			topic.AckWait[fVal](time.Minute))
		defer f.Close()
		buf := make([]topic.Record[fVal], 1)
		f.Read(buf) // 0 at t=0
		time.Sleep(30 * time.Second)
		f.Read(buf) // 1 at t=30s
		time.Sleep(10 * time.Second)
		f.Commit(0) // t=40s: 1 is the first read and not committed, read 10 s ago
		time.Sleep(25 * time.Second)
		// t=65s: 1 has been read and not committed for 35 s < AckWait.
		if n := f.Read(buf); n != 1 || buf[0].Offset != 2 {
			t.Errorf("at 65 s read %v, want offset 2 (offset 1 was read 35 s ago, under AckWait of 1 min)", recordOffsets(buf[:n]))
		}
	})
}

// AckWait reads again from "the first value it read and has not committed
// (after the last offset committed, or where it started or was moved to, if
// it committed nothing since)": after a Seek, with nothing committed since,
// the reread starts where the Seek moved it, not before.
func TestFollowAckWaitAfterSeekRereadsFromWhereItWasMoved(t *testing.T) {
	for _, tc := range []struct {
		name string
		to   uint64
	}{{"forward", 6}, {"back", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				b.Retain[fVal](topic.Retention{Count: 100})
				for n := range 10 {
					b.Publish(fVal{n})
				}
				f := b.Follow(topic.Name[fVal]("w"), topic.Replay[fVal](topic.Earliest()),
					topic.AckWait[fVal](time.Minute))
				defer f.Close()
				buf := make([]topic.Record[fVal], 4)
				f.Read(buf) // 0 to 3
				time.Sleep(time.Second)
				f.Seek(tc.to)
				n := f.Read(buf[:2]) // to, to+1
				if got := recordOffsets(buf[:n]); !slices.Equal(got, offsetRange(tc.to, tc.to+2)) {
					t.Fatalf("after Seek(%d) read %v", tc.to, got)
				}
				time.Sleep(2 * time.Minute)
				n = f.Read(buf[:1])
				if n != 1 || buf[0].Offset != tc.to {
					t.Errorf("after AckWait read %v, want the reread to start at %d, where Seek moved it", recordOffsets(buf[:n]), tc.to)
				}
			})
		})
	}
}

// AckWait: "Given to anything but a follower with a Name, it makes
// Subscribe, Handle or Follow panic."
func TestFollowAckWaitOnASubscriptionThatIsNotAFollowerPanics(t *testing.T) {
	var b topic.Broker
	b.Retain[fVal](topic.Retention{Count: 10})
	cases := map[string]func(){
		"Subscribe with a Name": func() {
			_, cancel := b.Subscribe(topic.Name[fVal]("s"), topic.AckWait[fVal](time.Second))
			cancel()
		},
		"Handle with a Name": func() {
			stop := b.Handle(func(context.Context, fVal) error { return nil },
				topic.Name[fVal]("h"), topic.AckWait[fVal](time.Second))
			stop()
		},
	}
	for what, f := range cases {
		msg, p := panicMessage(f)
		if !p || !strings.HasPrefix(msg, "topic: ") {
			t.Errorf("%s, AckWait, no Follow: panicked %v (%q), want a topic: panic", what, p, msg)
		}
	}
}

// Wait "returns once a record can be read": with AckWait, a record read and
// not committed can be read again once AckWait has passed, with nothing
// published since.
func TestFollowAckWaitWaitReturnsWhenAReReadIsDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 10})
		f := b.Follow(topic.Name[fVal]("w"), topic.AckWait[fVal](10*time.Millisecond))
		defer f.Close()
		b.Publish(fVal{1})
		buf := make([]topic.Record[fVal], 4)
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
		b.Retain[fVal](topic.Retention{Count: 10})
		f := b.Follow(topic.Name[fVal]("w"), topic.AckWait[fVal](10*time.Millisecond))
		defer f.Close()
		b.Publish(fVal{1})
		if r, err := f.Next(context.Background()); err != nil || r.Offset != 0 {
			t.Fatalf("first Next: %+v, %v", r, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r, err := f.Next(ctx)
		if err != nil || r.Offset != 0 || r.Value != (fVal{1}) {
			t.Errorf("Next after AckWait: %+v, %v; want offset 0 again", r, err)
		}
		f.Commit(0)
		if r, err := f.Next(ctx); err != context.DeadlineExceeded {
			t.Errorf("Next after the commit: %+v, %v; want nothing until ctx ends", r, err)
		}
	})
}

// What was read and not committed, and trimmed before AckWait let it be read
// again, is reported as skipped: its re-read is lost, and at least once
// cannot hold for it.
func TestFollowAckWaitReportsTrimmedReReadsAsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 4})
		var losses []topic.Loss[fVal]
		f := b.Follow(topic.Name[fVal]("a"), topic.AckWait[fVal](10*time.Millisecond),
			topic.OnLoss(func(l topic.Loss[fVal]) { losses = append(losses, l) }))
		defer f.Close()
		for i := range 4 {
			b.Publish(fVal{i})
		}
		buf := make([]topic.Record[fVal], 10)
		if n := f.Read(buf); n != 4 {
			t.Fatalf("Read read %d, want 4", n)
		}
		for i := 4; i < 8; i++ {
			b.Publish(fVal{i}) // trims 0..3, read and not committed
		}
		time.Sleep(20 * time.Millisecond)
		n := f.Read(buf)
		if n != 4 || buf[0].Offset != 4 || buf[0].Skipped != 4 || len(losses) != 1 || losses[0].Offset != 0 || losses[0].Count != 4 {
			t.Errorf("Read %d from %d, Skipped %d, OnLoss %+v; want 4 from 4, and 0..3 reported skipped", n, buf[0].Offset, buf[0].Skipped, losses)
		}
	})
}

// Wait returns once a re-read is due, but does not apply it: a commit
// after Wait returns still spares what it commits ("AckWait reads nothing
// up to o again").
func TestFollowAckWaitCommitAfterWaitSparesTheReRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 10})
		f := b.Follow(topic.Name[fVal]("w"), topic.AckWait[fVal](10*time.Millisecond))
		defer f.Close()
		for i := range 5 {
			b.Publish(fVal{i})
		}
		buf := make([]topic.Record[fVal], 10)
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

// AckWait: "what it has read and not committed for that long is read
// again". A re-read is a read: if it is not committed either, it is read
// again, AckWait after it. Next reads one record at a time.
func TestFollowAckWaitReReadIsReadAgainNext(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				if keyed {
					b.RetainLatest(func(v fVal) int { return v.N }, topic.Retention{Count: 10})
				} else {
					b.Retain[fVal](topic.Retention{Count: 10})
				}
				f := b.Follow(topic.Name[fVal]("w"), topic.AckWait[fVal](10*time.Millisecond))
				defer f.Close()
				b.Publish(fVal{1})
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				for i := range 4 {
					r, err := f.Next(ctx)
					if err != nil || r.Offset != 0 {
						t.Fatalf("Next #%d (never committed): %+v, %v; want offset 0 again", i+1, r, err)
					}
				}
			})
		})
	}
}

// The same with Read and a buffer that holds all of it: the re-read of
// everything up to the follower's position is read again too.
func TestFollowAckWaitReReadIsReadAgainRead(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				if keyed {
					b.RetainLatest(func(v fVal) int { return v.N }, topic.Retention{Count: 10})
				} else {
					b.Retain[fVal](topic.Retention{Count: 10})
				}
				f := b.Follow(topic.Name[fVal]("w"), topic.AckWait[fVal](10*time.Millisecond))
				defer f.Close()
				for i := range 5 {
					b.Publish(fVal{i})
				}
				buf := make([]topic.Record[fVal], 16)
				for i := range 4 {
					if n := f.Read(buf); n != 5 || buf[0].Offset != 0 {
						t.Fatalf("Read #%d (never committed): %d records from %d; want 5 from 0", i+1, n, buf[0].Offset)
					}
					time.Sleep(11 * time.Millisecond)
				}
			})
		})
	}
}

// Wait returns for the second re-read as it does for the first.
func TestFollowAckWaitWaitReturnsForTheSecondReRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 10})
		f := b.Follow(topic.Name[fVal]("w"), topic.AckWait[fVal](10*time.Millisecond))
		defer f.Close()
		b.Publish(fVal{1})
		buf := make([]topic.Record[fVal], 4)
		for i := range 3 {
			if n := f.Read(buf); n != 1 || buf[0].Offset != 0 {
				t.Fatalf("Read #%d: %d records from %d, want offset 0", i+1, n, buf[0].Offset)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := f.Wait(ctx)
			cancel()
			if err != nil {
				t.Fatalf("Wait #%d: %v; offset 0, read and not committed, is due again after 10ms", i+1, err)
			}
		}
	})
}

// Commit: "AckWait reads nothing up to o again". A re-read that has read
// part of what it re-reads, then a commit of all of it (the slow first
// handling of the batch finishing): the rest must not be read again.
func TestFollowAckWaitCommitDuringAPartialReReadIsHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 64})
		f := b.Follow(topic.Name[fVal]("w"), topic.AckWait[fVal](10*time.Millisecond))
		defer f.Close()
		for i := range 8 {
			b.Publish(fVal{i})
		}
		buf := make([]topic.Record[fVal], 16)
		if n := f.Read(buf); n != 8 {
			t.Fatalf("Read read %d, want 8", n)
		}
		time.Sleep(11 * time.Millisecond)
		if n := f.Read(buf[:4]); n != 4 || buf[0].Offset != 0 {
			t.Fatalf("re-read: %d records from %d, want 4 from 0", n, buf[0].Offset)
		}
		f.Commit(7) // every value up to 7 is handled
		if n := f.Read(buf); n != 0 {
			t.Errorf("Read after Commit(7) read %d records, offsets %d..%d: committed values read again", n, buf[0].Offset, buf[n-1].Offset)
		}
	})
}

// A Commit concurrent with a re-read: whichever goes first, once both are
// done the committed values are never read again. Real time, a race.
func TestFollowAckWaitCommitRacingAReReadIsHonoured(t *testing.T) {
	buf := make([]topic.Record[fVal], 4)
	bad, n := raceAReRead(t, ringOf8(), 20000, 0, func(f *topic.Follower[fVal]) { f.Commit(7) },
		func(f *topic.Follower[fVal], _ []topic.Record[fVal]) bool {
			// The commit of 7 is done: no read from now on reads 0..7
			// again. (This one reads 4..7 again when the re-read went
			// first: see TestFollowAckWaitCommitDuringAPartialReReadIsHonoured;
			// count only what no order of the two explains, a re-read from 0.)
			n := f.Read(buf)
			return n == 0 || buf[0].Offset != 0
		})
	if bad > 0 {
		t.Errorf("%d of %d trials: committed values read again", bad, n)
	}
}

// A Seek concurrent with a re-read: the Seek goes before or after the whole
// read; after both, the position is the Seek's or past what the read read.
// A Seek to the offset the read started from is an ABA for its CAS.
func TestFollowAckWaitSeekRacingAReReadIsNotLost(t *testing.T) {
	logged := false
	bad, n := raceAReRead(t, ringOf8(), 20000, 0, func(f *topic.Follower[fVal]) { f.Seek(8) },
		func(f *topic.Follower[fVal], read []topic.Record[fVal]) bool {
			// Seek first: the read reads nothing, at 8. Read first: the
			// Seek moves it to 8. Either way it is at 8 now.
			o := f.Offset()
			if o != 8 && !logged {
				t.Logf("read %d records, then at %d", len(read), o)
				logged = true
			}
			return o == 8
		})
	if bad > 0 {
		t.Errorf("%d of %d trials: the Seek to 8 lost", bad, n)
	}
}

// ringOf8 returns a broker that retains fVal in a ring and holds 8 values
// of it, at offsets 0 to 7.
func ringOf8() *topic.Broker {
	b := new(topic.Broker)
	b.Retain[fVal](topic.Retention{Count: 64})
	for i := range 8 {
		b.Publish(fVal{i})
	}
	return b
}

// raceAReRead runs trials in which a new named follower of V on b, which
// must hold 8 values of V at offsets 0 to 7, reads them with an AckWait of
// 1ns, then re-reads up to 4 of them while another goroutine calls other;
// after both, ok must hold, given what the re-read read. It runs at least
// least trials and until d has passed, and returns how many failed and how
// many ran.
func raceAReRead[V any](t *testing.T, b *topic.Broker, least int, d time.Duration, other func(*topic.Follower[V]), ok func(f *topic.Follower[V], reread []topic.Record[V]) bool) (bad, n int) {
	t.Helper()
	buf := make([]topic.Record[V], 16)
	n = runTrials(d, least, func(trial int) {
		f := b.Follow(topic.Name[V](fmt.Sprint("race", trial)), topic.Replay[V](topic.Earliest()),
			topic.AckWait[V](time.Nanosecond))
		defer f.Close()
		if k := f.Read(buf); k != 8 {
			t.Fatalf("Read read %d, want 8", k)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() { <-start; other(f) })
		close(start)
		k := f.Read(buf[:4]) // re-reads from 0, unless other went first
		wg.Wait()
		if !ok(f, buf[:k]) {
			bad++
		}
	})
	return bad, n
}

// Everything at once, for the race detector and for hangs: a reader in
// Next and Wait with AckWait on a ring with an age bound, while others
// publish, Seek, Commit, read the stats, and finally Close.
func TestFollowAckWaitStress(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			var b topic.Broker
			r := topic.Retention{Count: 64, Age: 2 * time.Millisecond}
			if keyed {
				b.RetainLatest(func(v fVal) int { return v.N % 8 }, r)
			} else {
				b.Retain[fVal](r)
			}
			f := b.Follow(topic.Name[fVal]("s"), topic.AckWait[fVal](time.Millisecond),
				topic.OnLoss(func(topic.Loss[fVal]) {}))
			var last atomic.Uint64 // offset read last, plus one
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					b.Publish(fVal{i})
					if i%16 == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			})
			wg.Go(func() {
				for i := uint64(0); ; i++ {
					select {
					case <-stop:
						return
					case <-time.After(700 * time.Microsecond):
					}
					f.Seek(f.Offset() - min(f.Offset(), i%5))
					if o := last.Load(); o > 0 {
						f.Commit(o - 1)
					}
					b.Subscriptions()
					b.Logs()
				}
			})
			done := make(chan error, 1)
			go func() {
				for {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
					r, err := f.Next(ctx)
					cancel()
					if err == topic.ErrClosed {
						done <- nil
						return
					}
					if err == nil {
						last.Store(max(last.Load(), r.Offset+1))
					}
					ctx, cancel = context.WithTimeout(context.Background(), 2*time.Millisecond)
					if err := f.Wait(ctx); err == topic.ErrClosed {
						cancel()
						done <- nil
						return
					}
					cancel()
				}
			}()
			time.Sleep(500 * time.Millisecond)
			close(stop)
			wg.Wait()
			f.Close()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the reader did not end after Close")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := b.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
		})
	}
}

// After a Seek back below what it committed, the follower reads those
// values again, once: the Seek asks for it. AckWait must not read them
// again and again: "AckWait reads nothing up to o again" for the o
// committed, and Commit of them again does nothing, so the reader cannot
// spare them otherwise.
func TestFollowAckWaitAfterASeekBackBelowTheCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 64})
		f := b.Follow(topic.Name[fVal]("w"), topic.AckWait[fVal](10*time.Millisecond))
		defer f.Close()
		for i := range 10 {
			b.Publish(fVal{i})
		}
		buf := make([]topic.Record[fVal], 16)
		if n := f.Read(buf); n != 10 {
			t.Fatalf("Read read %d, want 10", n)
		}
		f.Commit(9)
		f.Seek(0)
		if n := f.Read(buf[:4]); n != 4 || buf[0].Offset != 0 {
			t.Fatalf("Read after Seek(0): %d from %d, want 4 from 0", n, buf[0].Offset)
		}
		f.Commit(3) // handled again; below the commit of 9: does nothing
		time.Sleep(20 * time.Millisecond)
		if n := f.Read(buf); n != 6 || buf[0].Offset != 4 {
			t.Errorf("Read AckWait after: %d records from %d; want 4..9 (0..3 are committed)", n, buf[0].Offset)
		}
	})
}

// Held: a Commit of everything while Wait waits spares it; Wait then waits
// until ctx ends, not AckWait.
func TestFollowAckWaitCommitWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 10})
		f := b.Follow(topic.Name[fVal]("w"), topic.AckWait[fVal](10*time.Millisecond))
		defer f.Close()
		b.Publish(fVal{1})
		f.Read(make([]topic.Record[fVal], 4))
		errc := make(chan error, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		go func() { errc <- f.Wait(ctx) }()
		time.Sleep(5 * time.Millisecond)
		f.Commit(0)
		if err := <-errc; err != context.DeadlineExceeded {
			t.Errorf("Wait: %v, want the deadline", err)
		}
	})
}

// Held: a Seek while Wait waits for a re-read forgets the reads; Close
// ends a Wait whose timer is armed, and nothing is left running.
func TestFollowAckWaitSeekThenCloseWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 10})
		f := b.Follow(topic.Name[fVal]("w"), topic.AckWait[fVal](10*time.Millisecond))
		b.Publish(fVal{1})
		f.Read(make([]topic.Record[fVal], 4))
		errc := make(chan error, 1)
		go func() { errc <- f.Wait(context.Background()) }()
		time.Sleep(5 * time.Millisecond)
		f.Seek(1)
		time.Sleep(time.Second)
		select {
		case err := <-errc:
			t.Fatalf("Wait returned %v after a Seek to the end forgot the reads", err)
		default:
		}
		f.Close()
		if err := <-errc; err != topic.ErrClosed {
			t.Errorf("Wait: %v, want ErrClosed", err)
		}
		time.Sleep(time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
}

// ackVal is the ring type of these tests; ackKv the keyed one.
type ackVal struct{ N int }

// A follower reads 0..3 and does not commit. Retention then trims 0..7: its
// next read skips 4..7 (never read: told as skipped, 4) and reads 8..11.
// AckWait later re-reads from 0: 0..3 were trimmed before they could be
// read again (told as skipped: 4), then 8..11 again. 4..7 were told
// already: the re-read must not tell them again. Lost.Skipped counts values
// lost, each once: 8 here (0..7), not 12.
func TestFollowAckWaitReReadTellsASkippedGapOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[ackVal](topic.Retention{Count: 4})
		var losses []topic.Loss[ackVal]
		f := b.Follow(topic.Name[ackVal]("a"), topic.AckWait[ackVal](10*time.Millisecond),
			topic.OnLoss(func(l topic.Loss[ackVal]) { losses = append(losses, l) }))
		defer f.Close()
		for i := range 4 {
			b.Publish(ackVal{i})
		}
		buf := make([]topic.Record[ackVal], 16)
		if n := f.Read(buf); n != 4 {
			t.Fatalf("Read read %d, want 0..3", n)
		}
		for i := 4; i < 12; i++ {
			b.Publish(ackVal{i}) // trims 0..7
		}
		if n := f.Read(buf); n != 4 || buf[0].Offset != 8 || buf[0].Skipped != 4 {
			t.Fatalf("Read: %d from %d, Skipped %d; want 8..11, 4 skipped", n, buf[0].Offset, buf[0].Skipped)
		}
		time.Sleep(20 * time.Millisecond)
		n := f.Read(buf)
		t.Logf("re-read: %d records from %d, Skipped %d; OnLoss runs %v", n, buf[0].Offset, buf[0].Skipped, lossRuns(losses))
		if n != 4 || buf[0].Offset != 8 {
			t.Fatalf("re-read: %d from %d, want 8..11 again", n, buf[0].Offset)
		}
		if buf[0].Skipped != 4 {
			t.Errorf("re-read's first record Skipped = %d, want 4 (0..3; 4..7 were told before)", buf[0].Skipped)
		}
		wantToldOnce(t, &b, losses, 8) // offsets 0..7
	})
}

// The same through Wait: while it waits it skips what has all aged out
// (4..7, never read, told), then returns for the re-read of 0..3, which
// finds all of 0..7 aged out: 0..3 are lost to the re-read, 4..7 told
// already. The record after says how many were skipped just before it.
func TestFollowAckWaitReReadAfterWaitSkippedTellsAGapOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[ackVal](topic.Retention{Count: 100, Age: 50 * time.Millisecond})
		var losses []topic.Loss[ackVal]
		f := b.Follow(topic.Name[ackVal]("a"), topic.AckWait[ackVal](100*time.Millisecond),
			topic.OnLoss(func(l topic.Loss[ackVal]) { losses = append(losses, l) }))
		defer f.Close()
		for i := range 4 {
			b.Publish(ackVal{i})
		}
		buf := make([]topic.Record[ackVal], 16)
		if n := f.Read(buf); n != 4 {
			t.Fatalf("Read read %d, want 0..3", n)
		}
		time.Sleep(10 * time.Millisecond)
		for i := 4; i < 8; i++ {
			b.Publish(ackVal{i})
		}
		time.Sleep(60 * time.Millisecond) // 0..7 aged out
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := f.Wait(ctx); err != nil { // returns for the re-read, at 100ms
			t.Fatalf("Wait: %v", err)
		}
		if n := f.Read(buf); n != 0 {
			t.Fatalf("re-read read %d from %d, want none: all aged out", n, buf[0].Offset)
		}
		b.Publish(ackVal{8})
		n := f.Read(buf)
		t.Logf("Read: %d from %d, Skipped %d; OnLoss runs %v", n, buf[0].Offset, buf[0].Skipped, lossRuns(losses))
		if n != 1 || buf[0].Offset != 8 {
			t.Fatalf("Read %d from %d, want 8", n, buf[0].Offset)
		}
		if buf[0].Skipped != 8 {
			t.Errorf("record 8 Skipped = %d, want 8: 0..7, just before it, each once", buf[0].Skipped)
		}
		wantToldOnce(t, &b, losses, 8) // offsets 0..7
	})
}

func lossRuns[T any](ls []topic.Loss[T]) [][2]uint64 {
	var rs [][2]uint64
	for _, l := range ls {
		rs = append(rs, [2]uint64{l.Offset, l.Count})
	}
	return rs
}

// wantToldOnce checks that OnLoss told no offset twice and that the
// follower named "a" counts want values skipped: each lost value once.
func wantToldOnce(t *testing.T, b *topic.Broker, losses []topic.Loss[ackVal], want uint64) {
	t.Helper()
	if err := runsOverlap(losses); err != "" {
		t.Errorf("OnLoss told an offset twice: %s", err)
	}
	if st := statsNamed(t, b, "a"); st.Lost.Skipped != want {
		t.Errorf("Lost.Skipped = %d, want %d: each value lost counted once", st.Lost.Skipped, want)
	}
}

func runsOverlap[T any](ls []topic.Loss[T]) string {
	seen := map[uint64]int{}
	var dup []string
	for i, l := range ls {
		for o := l.Offset; o < l.Offset+l.Count; o++ {
			if j, ok := seen[o]; ok {
				dup = append(dup, fmt.Sprintf("offset %d in runs #%d and #%d", o, j, i))
			}
			seen[o] = i
		}
	}
	return strings.Join(dup, "; ")
}

// AckWait(d) with the longest d, "never, in practice": a follower that read
// a value and did not commit waits in Wait as any other, until ctx ends,
// without spinning. Real time; the CPU time it used tells a busy loop.
func TestFollowAckWaitHugeDoesNotSpin(t *testing.T) {
	var b topic.Broker
	b.Retain[ackVal](topic.Retention{Count: 8})
	f := b.Follow(topic.Name[ackVal]("h"), topic.AckWait[ackVal](time.Duration(1<<63-1)))
	defer f.Close()
	b.Publish(ackVal{1})
	if n := f.Read(make([]topic.Record[ackVal], 4)); n != 1 {
		t.Fatalf("Read read %d, want 1", n)
	}
	cpu := func() time.Duration {
		c := processCPU()
		if c < 0 {
			t.Skip("the system does not tell the process's CPU time")
		}
		return c
	}
	before := cpu()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := f.Wait(ctx)
	used := cpu() - before
	if err != context.DeadlineExceeded {
		t.Errorf("Wait: %v, want the deadline: nothing is due before 292 years", err)
	}
	if used > 100*time.Millisecond {
		t.Errorf("Wait of 300ms used %v of CPU: a busy loop (its re-read timer fires at once, again and again)", used)
	}
}

// A named channel follower with AckWait whose receiver is slower than
// AckWait: the pump commits what its channel took, so each value arrives
// once, in order; and a follower resumed under the name after a cancel
// starts right after what the channel took.
func TestFollowAckWaitChannelFollowerWithASlowReceiverGetsEachValueOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 100})
		ch, cancel := b.Subscribe(topic.Follow[topic.Record[fOrder]](), topic.Name[topic.Record[fOrder]]("a"),
			topic.AckWait[topic.Record[fOrder]](time.Second), topic.Buffer[topic.Record[fOrder]](4))
		for n := range 30 {
			b.Publish(fOrder{n})
		}
		var got []uint64
		for len(got) < 20 {
			time.Sleep(700 * time.Millisecond) // slower than AckWait over two values
			got = append(got, (<-ch).Offset)
		}
		synctest.Wait()
		committed := b.Subscriptions()[0].Follower.Committed
		cancel()
		for r := range ch {
			got = append(got, r.Offset) // what the channel took before cancel
		}
		if !slices.Equal(got, offsetRange(0, uint64(len(got)))) {
			t.Fatalf("received %v", got)
		}
		if committed != uint64(len(got)) {
			t.Errorf("committed %d once the pump was idle; the channel took %d", committed, len(got))
		}
		f := b.Follow(topic.Name[fOrder]("a"))
		defer f.Close()
		if rest := recordOffsets(readAllOf(f, 30-len(got))); !slices.Equal(rest, offsetRange(uint64(len(got)), 30)) {
			t.Errorf("resumed with %v after %d taken", rest, len(got))
		}
	})
}
