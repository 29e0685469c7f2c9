package topic_test

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

// frVal is the retained type of the review tests.
type frVal struct{ N int }

// frKv is the value of the keyed review tests.
type frKv struct {
	K string
	V int
}

func frKey(v frKv) string { return v.K }

// frWithin runs fn on a goroutine of its own and fails t if it has not
// returned within d: a hang fails instead of blocking the test binary.
func frWithin(t *testing.T, d time.Duration, what string, fn func()) bool {
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

func frOffsets[T any](recs []topic.Record[T]) []uint64 {
	var os []uint64
	for _, r := range recs {
		os = append(os, r.Offset)
	}
	return os
}

func frSeq(from, to uint64) []uint64 {
	var os []uint64
	for o := from; o < to; o++ {
		os = append(os, o)
	}
	return os
}

func frReadAll[T any](f *topic.Follower[T], n int) []topic.Record[T] {
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

// OnLoss "may publish, subscribe and cancel". A channel follower's OnLoss
// runs on its pump's goroutine (the Skipped report); cancelling the
// subscription from there must not wait for ever for the pump to close the
// channel.
func TestFollowEdgeChannelFollowerOnLossCancelsItself(t *testing.T) {
	var b topic.Broker
	b.Retain[frVal](topic.Retention{Count: 2})
	var cancel func()
	var ready sync.WaitGroup
	ready.Add(1)
	told := make(chan topic.Loss[frVal], 1)
	ch, c := b.Subscribe(topic.Follow[frVal](), topic.Buffer[frVal](0),
		topic.OnLoss(func(l topic.Loss[frVal]) {
			if l.Cause != topic.Skipped {
				return
			}
			ready.Wait()
			cancel() // from the pump's goroutine
			told <- l
		}))
	cancel = c
	ready.Done()
	b.Publish(frVal{0}) // the pump takes it and waits for a receiver
	for n := 1; n <= 10; n++ {
		b.Publish(frVal{n}) // 1 to 8 are trimmed
	}
	ok := frWithin(t, 10*time.Second, "OnLoss calling its own cancel", func() {
		<-ch // 0; the pump's next read skips 1 to 8
		<-told
		for range ch {
		}
	})
	if ok {
		l := b.Subscriptions()
		if len(l) != 0 {
			t.Errorf("%d subscriptions left after cancel", len(l))
		}
	}
}

// AckWait reads again "what it has read and not committed for d". A value
// read later than the first one, which is then committed, has not been
// uncommitted for d: it must not be read again yet.
func TestFollowEdgeAckWaitTimerFollowsTheFirstUncommittedValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[frVal](topic.Retention{Count: 100})
		for n := range 5 {
			b.Publish(frVal{n})
		}
		f := b.Follow(topic.Name[frVal]("w"), topic.Replay[frVal](topic.Earliest()),
			topic.AckWait[frVal](time.Minute))
		defer f.Close()
		buf := make([]topic.Record[frVal], 1)
		f.Read(buf) // 0 at t=0
		time.Sleep(30 * time.Second)
		f.Read(buf) // 1 at t=30s
		time.Sleep(10 * time.Second)
		f.Commit(0) // t=40s: 1 is the first read and not committed, read 10 s ago
		time.Sleep(25 * time.Second)
		// t=65s: 1 has been read and not committed for 35 s < AckWait.
		if n := f.Read(buf); n != 1 || buf[0].Offset != 2 {
			t.Errorf("at 65 s read %v, want offset 2 (offset 1 was read 35 s ago, under AckWait of 1 min)", frOffsets(buf[:n]))
		}
	})
}

// AckWait reads again from "the first value it read and has not committed
// (after the last offset committed, or where it started or was moved to, if
// it committed nothing since)": after a Seek, with nothing committed since,
// the reread starts where the Seek moved it, not before.
func TestFollowEdgeAckWaitAfterSeekRereadsFromWhereItWasMoved(t *testing.T) {
	for _, tc := range []struct {
		name string
		to   uint64
	}{{"forward", 6}, {"back", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				b.Retain[frVal](topic.Retention{Count: 100})
				for n := range 10 {
					b.Publish(frVal{n})
				}
				f := b.Follow(topic.Name[frVal]("w"), topic.Replay[frVal](topic.Earliest()),
					topic.AckWait[frVal](time.Minute))
				defer f.Close()
				buf := make([]topic.Record[frVal], 4)
				f.Read(buf) // 0 to 3
				time.Sleep(time.Second)
				f.Seek(tc.to)
				n := f.Read(buf[:2]) // to, to+1
				if got := frOffsets(buf[:n]); !slices.Equal(got, frSeq(tc.to, tc.to+2)) {
					t.Fatalf("after Seek(%d) read %v", tc.to, got)
				}
				time.Sleep(2 * time.Minute)
				n = f.Read(buf[:1])
				if n != 1 || buf[0].Offset != tc.to {
					t.Errorf("after AckWait read %v, want the reread to start at %d, where Seek moved it", frOffsets(buf[:n]), tc.to)
				}
			})
		})
	}
}

// FollowerStats.Lag is "the values kept from its offset on". On a
// RetainLatest log one key's value replaces the one before: five
// publications of one key keep one value.
func TestFollowEdgeKeyedLagCountsTheValuesKept(t *testing.T) {
	var b topic.Broker
	b.RetainLatest(frKey, topic.Retention{Count: 10})
	f := b.Follow(topic.Replay[frKv](topic.Earliest()))
	defer f.Close()
	for n := range 5 {
		b.Publish(frKv{"a", n})
	}
	st := b.Subscriptions()
	if len(st) != 1 || st[0].Follower == nil {
		t.Fatalf("subscriptions %+v", st)
	}
	recs := frReadAll(f, 10)
	if len(recs) != 1 {
		t.Fatalf("read %d records, want 1 (the log keeps one)", len(recs))
	}
	if st[0].Follower.Lag != 1 || st[0].Queued != 1 {
		t.Errorf("Lag %d, Queued %d before reading; the log keeps %d value from the follower's offset on",
			st[0].Follower.Lag, st[0].Queued, len(recs))
	}
}

// Close frees the name "with its committed offset kept". A late Commit
// through the closed follower must not move the offset of the name, which
// another follower now holds: the next follower under the name would skip
// what the live one never handled.
func TestFollowEdgeCommitAfterCloseLeavesTheNameAlone(t *testing.T) {
	var b topic.Broker
	b.Retain[frVal](topic.Retention{Count: 100})
	for n := range 10 {
		b.Publish(frVal{n})
	}
	f1 := b.Follow(topic.Name[frVal]("n"), topic.Replay[frVal](topic.Earliest()))
	frReadAll(f1, 10) // 0 to 9, not committed
	f1.Close()
	f2 := b.Follow(topic.Name[frVal]("n"), topic.Replay[frVal](topic.Earliest()))
	buf := make([]topic.Record[frVal], 5)
	f2.Read(buf) // 0 to 4
	f2.Commit(4)
	_, p := panicMessage(func() { f1.Commit(9) }) // late, through the closed follower
	f2.Close()
	f3 := b.Follow(topic.Name[frVal]("n"))
	defer f3.Close()
	if got := frOffsets(frReadAll(f3, 10)); !slices.Equal(got, frSeq(5, 10)) {
		t.Errorf("the name resumed with %v, want 5 to 9 (f2 committed 4; f1 was closed; its Commit panicked: %v)", got, p)
	}
}

// AckWait: "Given to anything but a follower with a Name, it makes
// Subscribe, Handle or Follow panic."
func TestFollowEdgeAckWaitOnASubscriptionThatIsNotAFollowerPanics(t *testing.T) {
	var b topic.Broker
	b.Retain[frVal](topic.Retention{Count: 10})
	cases := map[string]func(){
		"Subscribe with a Name": func() {
			_, cancel := b.Subscribe(topic.Name[frVal]("s"), topic.AckWait[frVal](time.Second))
			cancel()
		},
		"Handle with a Name": func() {
			stop := b.Handle(func(context.Context, frVal) error { return nil },
				topic.Name[frVal]("h"), topic.AckWait[frVal](time.Second))
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

// Record.Skipped counts "the values just before it that retention trimmed
// before the follower reached them". Values trimmed before a Seek moved the
// follower elsewhere are not just before the record it reads there.
func TestFollowEdgeSkippedIsNotCarriedAcrossASeek(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[frVal](topic.Retention{Count: 100, Age: time.Second})
		var told atomic.Uint64
		f := b.Follow(topic.Replay[frVal](topic.Earliest()), topic.OnLoss(func(l topic.Loss[frVal]) {
			if l.Cause == topic.Skipped {
				told.Add(l.Count)
			}
		}))
		defer f.Close()
		for n := range 5 {
			b.Publish(frVal{n})
		}
		time.Sleep(2 * time.Second) // 0 to 4 expire
		buf := make([]topic.Record[frVal], 4)
		if n := f.Read(buf); n != 0 {
			t.Fatalf("read %d expired values", n)
		}
		if told.Load() != 5 {
			t.Fatalf("told %d skipped, want 5", told.Load())
		}
		f.Seek(7)
		for n := 5; n < 8; n++ {
			b.Publish(frVal{n}) // 5, 6, 7: fresh
		}
		n := f.Read(buf)
		if n != 1 || buf[0].Offset != 7 {
			t.Fatalf("read %v, want [7]", frOffsets(buf[:n]))
		}
		if buf[0].Skipped != 0 {
			t.Errorf("record 7 has Skipped %d; 5 and 6, just before it, were kept (it was moved past them)", buf[0].Skipped)
		}
	})
}

// Wait "returns once a record can be read". A value kept by Count but past
// Age cannot be read: Wait must not return nil only for Read to find
// nothing.
func TestFollowEdgeWaitReturnsOnlyWhenARecordCanBeRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[frVal](topic.Retention{Count: 100, Age: time.Second})
		f := b.Follow[frVal]()
		defer f.Close()
		b.Publish(frVal{0})
		time.Sleep(2 * time.Second) // expired, not trimmed: no publication since
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := f.Wait(ctx)
		n := f.Read(make([]topic.Record[frVal], 4))
		if err == nil && n == 0 {
			t.Errorf("Wait returned nil, then Read read nothing (the one value had expired)")
		}
	})
}

// A pull follower's OnLoss runs on the goroutine that reads; calls back into
// the follower and the broker from there (Seek, Commit, Subscriptions,
// Follow, Close, Shutdown) return.
func TestFollowEdgePullOnLossReentry(t *testing.T) {
	for _, what := range []string{"Seek", "Commit", "Follow", "Subscriptions", "Close", "Shutdown"} {
		t.Run(what, func(t *testing.T) {
			var b topic.Broker
			b.Retain[frVal](topic.Retention{Count: 2})
			var f *topic.Follower[frVal]
			var inside atomic.Int32
			f = b.Follow(topic.Name[frVal]("p"), topic.Replay[frVal](topic.Earliest()), topic.OnLoss(func(l topic.Loss[frVal]) {
				if l.Cause != topic.Skipped || inside.Add(1) != 1 {
					return
				}
				switch what {
				case "Seek":
					f.Seek(0)
					b.Seek[frVal]("p", 0)
				case "Commit":
					f.Commit(0)
				case "Follow":
					g := b.Follow[frVal]()
					g.Close()
				case "Subscriptions":
					b.Subscriptions()
				case "Close":
					f.Close()
				case "Shutdown":
					b.Shutdown(context.Background())
				}
			}))
			b.Publish(frVal{0})
			buf := make([]topic.Record[frVal], 1)
			f.Read(buf)
			for n := 1; n <= 10; n++ {
				b.Publish(frVal{n})
			}
			frWithin(t, 10*time.Second, what+" from OnLoss", func() {
				frReadAll(f, 4)
				f.Close()
				b.Shutdown(context.Background())
			})
			if g := b.Goroutines(); g != 0 {
				t.Errorf("%d goroutines after Shutdown", g)
			}
		})
	}
}

// A handler follower's function and OnLoss may call back into the broker:
// its own stop, Broker.Seek of its own name, Follow, Shutdown.
func TestFollowEdgeHandlerFollowerReentry(t *testing.T) {
	for _, what := range []string{"stop", "seek", "follow", "shutdown", "onloss-stop", "onloss-shutdown"} {
		t.Run(what, func(t *testing.T) {
			var b topic.Broker
			b.Retain[frVal](topic.Retention{Count: 2})
			var stop func()
			ready := make(chan struct{})
			var handled []int
			var mu sync.Mutex
			var once sync.Once
			gate := make(chan struct{})
			stop = b.Handle(func(ctx context.Context, v frVal) error {
				<-ready
				if v.N == 0 {
					<-gate // hold 0 until the rest is published and trimmed
				}
				mu.Lock()
				handled = append(handled, v.N)
				mu.Unlock()
				once.Do(func() {
					switch what {
					case "stop":
						stop()
					case "seek":
						if !b.Seek[frVal]("h", 0) {
							t.Error("Seek of its own name found none")
						}
					case "follow":
						g := b.Follow[frVal]()
						g.Close()
					case "shutdown":
						b.Shutdown(context.Background())
					}
				})
				return nil
			}, topic.Follow[frVal](), topic.Name[frVal]("h"), topic.Replay[frVal](topic.Earliest()),
				topic.OnLoss(func(l topic.Loss[frVal]) {
					switch what {
					case "onloss-stop":
						stop()
					case "onloss-shutdown":
						b.Shutdown(context.Background())
					}
				}))
			close(ready)
			b.Publish(frVal{0})
			for n := 1; n <= 10; n++ {
				b.Publish(frVal{n})
			}
			close(gate)
			frWithin(t, 10*time.Second, what, func() {
				if strings.HasSuffix(what, "stop") {
					stop()
				}
				if err := b.Shutdown(context.Background()); err != nil {
					t.Error(err)
				}
			})
			if g := b.Goroutines(); g != 0 {
				t.Errorf("%d goroutines after Shutdown", g)
			}
			if strings.HasSuffix(what, "stop") {
				return // stopped before Shutdown: not in its final counts
			}
			st := b.Subscriptions()
			if len(st) != 1 {
				t.Fatalf("%d final subscriptions", len(st))
			}
			h := st[0].Handler
			if h.Accepted != h.Handled+st[0].Lost.Errored+st[0].Lost.Discarded {
				t.Errorf("accepted %d != handled %d + lost %+v", h.Accepted, h.Handled, st[0].Lost)
			}
			mu.Lock()
			if uint64(len(handled)) != h.Handled {
				t.Errorf("handled %v, stats say %d", handled, h.Handled)
			}
			mu.Unlock()
		})
	}
}

// Shutdown "waits for the handlers' goroutines to end"; the seam's
// Goroutines counts a broker goroutine "until just before its stop function
// or Shutdown may return". A channel follower's pump is a goroutine of the
// broker too (it is counted), but Shutdown returns while it still runs:
// here it reports the value it held (Closed) to OnLoss after Shutdown has
// returned, and is still counted. (Without the gate the window is short:
// a loop of 1500 Shutdowns finds Goroutines() != 0 just after Shutdown in
// one to three of them.)
func TestFollowEdgeShutdownWaitsForAChannelFollowersPump(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[frVal](topic.Retention{Count: 4})
		gate := make(chan struct{})
		var closedTold atomic.Int32
		b.Subscribe(topic.Follow[frVal](), topic.Buffer[frVal](0), topic.OnLoss(func(l topic.Loss[frVal]) {
			if l.Cause == topic.Closed {
				<-gate
				closedTold.Add(1)
			}
		}))
		b.Publish(frVal{1})
		synctest.Wait() // the pump holds 1, waiting for a receiver
		returned := make(chan error, 1)
		go func() { returned <- b.Shutdown(context.Background()) }()
		synctest.Wait()
		select {
		case <-returned:
			t.Fatal("Shutdown returned while the pump's OnLoss function runs")
		default:
		}
		close(gate)
		if err := <-returned; err != nil {
			t.Fatal(err)
		}
		if g, told := b.Goroutines(), closedTold.Load(); g != 0 || told != 1 {
			t.Errorf("Shutdown returned with %d broker goroutine(s) still running (told %d of 1 Closed)", g, told)
		}
	})
}

// Concurrent publishers, readers, Seeks (own and by name), Commits and
// name churn: every record read carries the value published at its offset,
// offsets increase between seeks, and nothing panics.
func TestFollowEdgeConcurrentFollowerChurn(t *testing.T) {
	var b topic.Broker
	b.Retain[frVal](topic.Retention{Count: 32})
	const pubs, per = 3, 3000
	var wg sync.WaitGroup
	var stopFlag atomic.Bool
	for p := range pubs {
		wg.Go(func() {
			for i := range per {
				b.Publish(frVal{p*per + i})
			}
		})
	}
	// values are unique; check each record against Read of the same offset
	errs := make(chan string, 100)
	for r := range 3 {
		wg.Go(func() {
			name := fmt.Sprintf("r%d", r)
			for round := 0; !stopFlag.Load() && round < 50; round++ {
				f := b.Follow(topic.Name[frVal](name), topic.Replay[frVal](topic.Earliest()),
					topic.AckWait[frVal](time.Millisecond))
				buf := make([]topic.Record[frVal], 8)
				for k := 0; k < 40; k++ {
					n := f.Read(buf)
					for i := range n {
						got, _, _ := b.Read[frVal](buf[i].Offset, 1)
						if len(got) == 1 && got[0].Offset == buf[i].Offset && got[0].Value != buf[i].Value {
							select {
							case errs <- fmt.Sprintf("offset %d: read %v, log has %v", buf[i].Offset, buf[i].Value, got[0].Value):
							default:
							}
						}
						if i > 0 && buf[i].Offset <= buf[i-1].Offset {
							select {
							case errs <- fmt.Sprintf("offsets not increasing in one read: %v", frOffsets(buf[:n])):
							default:
							}
						}
					}
					if n > 0 && k%3 == 0 {
						f.Commit(buf[n-1].Offset)
					}
					if k%7 == 0 {
						f.Seek(f.Offset() / 2)
					}
				}
				f.Close()
			}
		})
		wg.Go(func() {
			name := fmt.Sprintf("r%d", r)
			for !stopFlag.Load() {
				b.Seek[frVal](name, 0)
				b.Subscriptions()
				time.Sleep(10 * time.Microsecond)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	time.Sleep(200 * time.Millisecond)
	stopFlag.Store(true)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("hang")
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := len(b.Subscriptions()); n != 0 {
		t.Errorf("%d subscriptions left", n)
	}
}
