package topic_test

// Adversarial review of the followers (a helper's, third round, 2026-12-03):
// AckWait's re-reads, read again when not committed; commits during them
// and racing them; Seeks racing them (to the offset the read started from);
// a Seek back below the commit, whose reads AckWait must not repeat.

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

// AckWait: "what it has read and not committed for that long is read
// again". A re-read is a read: if it is not committed either, it is read
// again, AckWait after it. Next reads one record at a time.
func TestFollowAckWaitReReadIsReadAgainNext(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				if keyed {
					b.RetainLatest(func(v frVal) int { return v.N }, topic.Retention{Count: 10})
				} else {
					b.Retain[frVal](topic.Retention{Count: 10})
				}
				f := b.Follow(topic.Name[frVal]("w"), topic.AckWait[frVal](10*time.Millisecond))
				defer f.Close()
				b.Publish(frVal{1})
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
					b.RetainLatest(func(v frVal) int { return v.N }, topic.Retention{Count: 10})
				} else {
					b.Retain[frVal](topic.Retention{Count: 10})
				}
				f := b.Follow(topic.Name[frVal]("w"), topic.AckWait[frVal](10*time.Millisecond))
				defer f.Close()
				for i := range 5 {
					b.Publish(frVal{i})
				}
				buf := make([]topic.Record[frVal], 16)
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
		b.Retain[frVal](topic.Retention{Count: 10})
		f := b.Follow(topic.Name[frVal]("w"), topic.AckWait[frVal](10*time.Millisecond))
		defer f.Close()
		b.Publish(frVal{1})
		buf := make([]topic.Record[frVal], 4)
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
		b.Retain[frVal](topic.Retention{Count: 64})
		f := b.Follow(topic.Name[frVal]("w"), topic.AckWait[frVal](10*time.Millisecond))
		defer f.Close()
		for i := range 8 {
			b.Publish(frVal{i})
		}
		buf := make([]topic.Record[frVal], 16)
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
	buf := make([]topic.Record[frVal], 4)
	bad, n := raceAReRead(t, ringOf8(), 20000, 0, func(f *topic.Follower[frVal]) { f.Commit(7) },
		func(f *topic.Follower[frVal], _ []topic.Record[frVal]) bool {
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
	bad, n := raceAReRead(t, ringOf8(), 20000, 0, func(f *topic.Follower[frVal]) { f.Seek(8) },
		func(f *topic.Follower[frVal], read []topic.Record[frVal]) bool {
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

// ringOf8 returns a broker that retains frVal in a ring and holds 8 values
// of it, at offsets 0 to 7.
func ringOf8() *topic.Broker {
	b := new(topic.Broker)
	b.Retain[frVal](topic.Retention{Count: 64})
	for i := range 8 {
		b.Publish(frVal{i})
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
	n = r4Trials(d, least, func(trial int) {
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
				b.RetainLatest(func(v frVal) int { return v.N % 8 }, r)
			} else {
				b.Retain[frVal](r)
			}
			f := b.Follow(topic.Name[frVal]("s"), topic.AckWait[frVal](time.Millisecond),
				topic.OnLoss(func(topic.Loss[frVal]) {}))
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
					b.Publish(frVal{i})
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
		b.Retain[frVal](topic.Retention{Count: 64})
		f := b.Follow(topic.Name[frVal]("w"), topic.AckWait[frVal](10*time.Millisecond))
		defer f.Close()
		for i := range 10 {
			b.Publish(frVal{i})
		}
		buf := make([]topic.Record[frVal], 16)
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

// A handler follower with AckWait moved back by Broker.Seek to replay what
// it handled: it handles each value once more and catches up. When the
// replay takes longer than AckWait, its commits (all below the commit it
// made before) do nothing, and AckWait sent it back to the Seek's offset
// again and again.
func TestFollowHandlerAckWaitReplayAfterBrokerSeekEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[frVal](topic.Retention{Count: 64})
		var handled atomic.Int64
		stop := b.Handle(func(context.Context, frVal) error {
			handled.Add(1)
			time.Sleep(4 * time.Millisecond)
			return nil
		}, topic.Follow[frVal](), topic.Name[frVal]("h"), topic.AckWait[frVal](10*time.Millisecond))
		defer stop()
		for i := range 10 {
			b.Publish(frVal{i})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.Settle(ctx); err != nil || handled.Load() != 10 {
			t.Fatalf("Settle: %v, %d handled, want 10", err, handled.Load())
		}
		if !b.Seek[frVal]("h", 0) {
			t.Fatal("no live follower named h")
		}
		if err := b.Settle(ctx); err != nil || handled.Load() != 20 {
			t.Errorf("Settle after Seek(0): %v, with %d handled; want nil and 20 (each value once more)", err, handled.Load())
		}
	})
}

// Held: a Commit of everything while Wait waits spares it; Wait then waits
// until ctx ends, not AckWait.
func TestFollowAckWaitCommitWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[frVal](topic.Retention{Count: 10})
		f := b.Follow(topic.Name[frVal]("w"), topic.AckWait[frVal](10*time.Millisecond))
		defer f.Close()
		b.Publish(frVal{1})
		f.Read(make([]topic.Record[frVal], 4))
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
		b.Retain[frVal](topic.Retention{Count: 10})
		f := b.Follow(topic.Name[frVal]("w"), topic.AckWait[frVal](10*time.Millisecond))
		b.Publish(frVal{1})
		f.Read(make([]topic.Record[frVal], 4))
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

// Held: a handler follower with AckWait in a bubble, whose handler takes
// longer than AckWait, handles each value once; Settle and Shutdown end.
func TestFollowHandlerAckWaitSlowHandlerInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[frVal](topic.Retention{Count: 64, Age: time.Second})
		var handled atomic.Int64
		b.Handle(func(context.Context, frVal) error {
			handled.Add(1)
			time.Sleep(25 * time.Millisecond)
			return nil
		}, topic.Follow[frVal](), topic.Name[frVal]("h"), topic.AckWait[frVal](10*time.Millisecond))
		for i := range 5 {
			b.Publish(frVal{i})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Settle(ctx); err != nil || handled.Load() != 5 {
			t.Fatalf("Settle: %v, %d handled, want 5", err, handled.Load())
		}
		time.Sleep(3 * time.Second) // all aged out; timers long due
		if err := b.Shutdown(ctx); err != nil || handled.Load() != 5 {
			t.Fatalf("Shutdown: %v, %d handled, want 5", err, handled.Load())
		}
	})
}
