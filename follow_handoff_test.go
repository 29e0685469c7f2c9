package topic_test

// Tests of the hand-off of a caught-up channel follower: each publication
// sends to its channel directly, and its pump is woken only when the
// receiver falls behind or the channel is full, by a Seek or at its end;
// nothing is lost, duplicated or reordered across the changes, and its
// counts are exact throughout.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

type hoVal struct{ N int }

// hoFollow returns the options of a channel follower of hoVal named name,
// with a channel of buffer values, and more.
func hoFollow(name string, buffer int, more ...topic.Option[hoVal]) []topic.Option[hoVal] {
	return append([]topic.Option[hoVal]{topic.Follow[hoVal](), topic.Name[hoVal](name), topic.Buffer[hoVal](buffer)}, more...)
}

// handoffStats returns the stats of the only subscription of b.
func handoffStats(t *testing.T, b *topic.Broker) topic.SubscriptionStats {
	t.Helper()
	subs := b.Subscriptions()
	if len(subs) != 1 {
		t.Fatalf("%d subscriptions, want 1", len(subs))
	}
	return subs[0]
}

// A channel follower that has read all there is is handed each value by its
// publication: its pump is not woken, and its counts (sent, offset,
// committed, lag) are those of a pump that sent each value.
func TestFollowACaughtUpChannelFollowerIsHandedValuesWithoutItsPump(t *testing.T) {
	for _, buffer := range []int{0, 1, 4} {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			b.Retain[hoVal](topic.Retention{Count: 64})
			ch, cancel := b.Subscribe(hoFollow("h", buffer)...)
			defer cancel()
			synctest.Wait() // the pump has read nothing and waits
			before := topic.Wakes[hoVal](&b, "h")
			got := make(chan int)
			go func() {
				for v := range ch {
					got <- v.N
				}
				close(got)
			}()
			const n = 200
			for i := range n {
				synctest.Wait() // the receiver waits: an unbuffered send finds it
				b.Publish(hoVal{i})
				if v := <-got; v != i {
					t.Fatalf("buffer %d: received %d, want %d", buffer, v, i)
				}
			}
			synctest.Wait()
			if w := topic.Wakes[hoVal](&b, "h") - before; w != 0 {
				t.Errorf("buffer %d: the pump was woken %d times by %d publications its channel had room for", buffer, w, n)
			}
			st := handoffStats(t, &b)
			f := st.Follower
			if st.Sent != n || f.Offset != n || f.Committed != n || f.Lag != 0 {
				t.Errorf("buffer %d: sent %d, offset %d, committed %d, lag %d; want %d, %d, %d, 0", buffer, st.Sent, f.Offset, f.Committed, f.Lag, n, n, n)
			}
			if err := b.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			st = handoffStats(t, &b)
			if st.Sent != n || st.Matched != n || st.Lost != (topic.Lost{}) || st.Follower.Committed != n {
				t.Errorf("buffer %d, after Shutdown: sent %d, matched %d, lost %+v, committed %d; want %d, %d, none, %d", buffer, st.Sent, st.Matched, st.Lost, st.Follower.Committed, n, n, n)
			}
			for range got {
				t.Error("a value after Shutdown")
			}
		})
	}
}

// A publication that finds the channel full leaves the value to the pump,
// which reads it and those after it from the log in order, then, caught
// up, is handed values again: nothing lost, duplicated or reordered.
func TestFollowAFullChannelFollowerGoesBackToItsPumpAndLosesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[hoVal](topic.Retention{Count: 256})
		ch, cancel := b.Subscribe(hoFollow("h", 3)...)
		defer cancel()
		synctest.Wait()
		next := 0
		take := func(k int) {
			for range k {
				if v := <-ch; v.N != next {
					t.Fatalf("received %d, want %d", v.N, next)
				}
				next++
			}
		}
		for round := range 5 {
			for i := range 100 {
				b.Publish(hoVal{next + i}) // nothing taken: the channel fills
			}
			take(100)
			synctest.Wait() // the pump has caught up and waits
			w := topic.Wakes[hoVal](&b, "h")
			b.Publish(hoVal{next})
			take(1)
			synctest.Wait()
			if d := topic.Wakes[hoVal](&b, "h") - w; d != 0 {
				t.Fatalf("round %d: caught up again, the pump was woken %d times by a publication", round, d)
			}
			// The next round's first value follows the one just taken.
			for i := range 99 {
				b.Publish(hoVal{next + i})
			}
			take(99)
			synctest.Wait()
		}
		st := handoffStats(t, &b)
		if st.Lost != (topic.Lost{}) || st.Sent != uint64(next) || st.Follower.Committed != uint64(next) {
			t.Errorf("lost %+v, sent %d, committed %d; want none, %d, %d", st.Lost, st.Sent, st.Follower.Committed, next, next)
		}
	})
}

// A Seek ends the hand-off before it returns: what the channel receives
// after it is read from where the Seek moved the follower, back or ahead.
func TestFollowASeekEndsTheHandOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[hoVal](topic.Retention{Count: 64})
		ch, cancel := b.Subscribe(hoFollow("h", 16)...)
		defer cancel()
		expect := func(want ...int) {
			t.Helper()
			for _, w := range want {
				if v := <-ch; v.N != w {
					t.Fatalf("received %d, want %d", v.N, w)
				}
			}
			synctest.Wait()
			if len(ch) != 0 {
				t.Fatalf("%d more values", len(ch))
			}
		}
		synctest.Wait()
		for i := range 10 {
			b.Publish(hoVal{i})
		}
		expect(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
		b.Seek[hoVal]("h", 5)
		b.Publish(hoVal{10})
		expect(5, 6, 7, 8, 9, 10)
		b.Seek[hoVal]("h", 13) // ahead of the tail
		b.Publish(hoVal{11})
		b.Publish(hoVal{12})
		b.Publish(hoVal{13})
		b.Publish(hoVal{14})
		expect(13, 14)
		st := handoffStats(t, &b)
		if st.Follower.Offset != 15 || st.Follower.Lag != 0 {
			t.Errorf("offset %d, lag %d; want 15, 0", st.Follower.Offset, st.Follower.Lag)
		}
	})
}

// Publishers racing a cancel or Shutdown of a channel follower that is
// handed values: no send on its closed channel, each publisher's values
// received in order with none twice, and after Shutdown every value the
// log took is counted, sent (received) or lost Closed.
func TestFollowHandOffRacingCancelAndShutdown(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	for round := range rounds {
		shutdown := round%2 == 1
		var b topic.Broker
		b.Retain[hoVal](topic.Retention{Count: 1 << 12})
		ch, cancel := b.Subscribe(hoFollow("h", round%5)...)
		// A follower that reads nothing: what Shutdown finds it has not
		// read is what the log took.
		all := b.Follow(topic.Name[hoVal]("all"))
		const publishers = 2
		var wg sync.WaitGroup
		for p := range publishers {
			wg.Go(func() {
				for i := range 1000 {
					b.Publish(hoVal{p<<20 | i})
				}
			})
		}
		received := 0
		last := [publishers]int{-1, -1}
		stopAt := 200 + round*7%800
		for v := range ch {
			p, i := v.N>>20, v.N&(1<<20-1)
			if i <= last[p] {
				t.Fatalf("round %d: publisher %d's %d after its %d", round, p, i, last[p])
			}
			last[p] = i
			received++
			if received == stopAt {
				if shutdown {
					go b.Shutdown(context.Background())
				} else {
					go cancel()
				}
			}
		}
		wg.Wait()
		if shutdown {
			if err := b.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			st := map[string]topic.SubscriptionStats{}
			for _, s := range b.Subscriptions() {
				st[s.Name] = s
			}
			h, took := st["h"], st["all"].Lost.Closed
			if h.Sent != uint64(received) {
				t.Fatalf("round %d: sent %d, received %d", round, h.Sent, received)
			}
			if h.Sent+h.Lost.Closed != took || h.Matched != took {
				t.Fatalf("round %d: sent %d + closed %d (matched %d), the log took %d", round, h.Sent, h.Lost.Closed, h.Matched, took)
			}
		} else {
			b.Shutdown(context.Background())
		}
		all.Close()
	}
}

// A channel follower whose receiver stopped reading must still be
// cancellable: its pump waits for room or for its end (as before the
// hand-off), even once publications have filled the channel while the
// pump waited, with room for a batch when it began to wait.
func TestFollowCancelOfAFullChannelFollowerAfterAHandOffDoesNotWaitForItsReceiver(t *testing.T) {
	for _, buffer := range []int{0, 1, 2, 16} {
		t.Run(fmt.Sprint("buffer", buffer), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				b.Retain[hoVal](topic.Retention{Count: 64})
				ch, cancel := b.Subscribe(hoFollow("h", buffer)...)
				synctest.Wait() // the pump has read nothing: on the hand-off list
				for i := range buffer + 1 {
					b.Publish(hoVal{i}) // the last finds the channel full
				}
				synctest.Wait()
				done := make(chan struct{})
				go func() { cancel(); close(done) }()
				synctest.Wait()
				select {
				case <-done:
				default:
					buf := make([]byte, 1<<20)
					buf = buf[:runtime.Stack(buf, true)]
					where := "?"
					for _, g := range strings.Split(string(buf), "\n\n") {
						if strings.Contains(g, ".pump(") {
							where = g
						}
					}
					t.Errorf("cancel blocks until the receiver reads (queued %d of %d); the pump:\n%s", len(ch), cap(ch), where)
				}
				for range ch { // unblock the pump, so that the bubble ends
				}
				<-done
			})
		})
	}
}

// The same with Shutdown: it must not wait for a receiver that stopped
// reading; and the counts must add up once it returns.
func TestFollowShutdownOfAFullChannelFollowerAfterAHandOffDoesNotWaitForItsReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[hoVal](topic.Retention{Count: 64})
		ch, _ := b.Subscribe(hoFollow("h", 4)...)
		synctest.Wait()
		for i := range 10 {
			b.Publish(hoVal{i})
		}
		synctest.Wait()
		ctx, stop := context.WithTimeout(context.Background(), time.Hour)
		defer stop()
		start := time.Now() // the bubble's clock: it moves only when all wait
		err := b.Shutdown(ctx)
		if d := time.Since(start); err != nil || d != 0 {
			t.Errorf("Shutdown returned %v after %v: it waited for the pump, stuck in a send to a full channel", err, d)
		}
		st := fsStats[hoVal](t, &b, "h")
		if st.Matched != 10 || st.Sent+st.Lost.Closed != 10 {
			t.Errorf("matched %d, sent %d, closed %d; want 10, sent+closed 10", st.Matched, st.Sent, st.Lost.Closed)
		}
		n := 0
		for range ch {
			n++
		}
		if st := fsStats[hoVal](t, &b, "h"); uint64(n) != st.Sent {
			t.Errorf("received %d, sent %d", n, st.Sent)
		}
	})
}

// A Context option's cancel of a full channel follower after a hand-off:
// the AfterFunc's cancel must return (Settle then returns).
func TestFollowTheContextOfAFullChannelFollowerAfterAHandOffEndsItsPump(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[hoVal](topic.Retention{Count: 64})
		ctx, cancelCtx := context.WithCancel(context.Background())
		ch, _ := b.Subscribe(hoFollow("h", 3, topic.Context[hoVal](ctx))...)
		synctest.Wait()
		for i := range 8 {
			b.Publish(hoVal{i})
		}
		synctest.Wait()
		cancelCtx()
		synctest.Wait()
		if b.Goroutines() != 0 {
			t.Errorf("%d goroutines of the broker still run after its context ended (the pump is stuck)", b.Goroutines())
		}
		for range ch {
		}
	})
}

// A value a channel follower receives from the hand-off must be in the log
// when it receives it, as for a value sent in order (see sendOrdered:
// "publish v's offset before sending it"): Read from its offset finds it.
func TestFollowAHandedValueIsReadableWhenReceived(t *testing.T) {
	const followers, n = 32, 20000
	var b topic.Broker
	b.Retain[hoVal](topic.Retention{Count: 1 << 16})
	var chs []<-chan hoVal
	for i := range followers {
		ch, cancel := b.Subscribe(hoFollow(fmt.Sprint("f", i), n+1)...)
		defer cancel()
		chs = append(chs, ch)
	}
	var missing, checked atomic.Int64
	done := make(chan struct{})
	go func() { // busy: receives each value as soon as it is in the channel
		defer close(done)
		for got := 0; got < n; {
			select {
			case v := <-chs[0]:
				got++
				if recs, _, _ := b.Read[hoVal](uint64(v.N), 1); len(recs) == 0 {
					missing.Add(1)
				}
				checked.Add(1)
			default:
			}
		}
	}()
	for i := range n {
		b.Publish(hoVal{i}) // value i at offset i
		if i%1000 == 0 {
			runtime.Gosched()
		}
	}
	<-done
	if m := missing.Load(); m != 0 {
		t.Errorf("%d of %d values received by the follower were not yet readable from the log (Read from their offset found nothing)", m, checked.Load())
	}
}

// Committed never exceeds Offset in one snapshot of a channel follower's
// stats, and Sent, Offset and Committed never go back.
func TestFollowHandOffStatsAreConsistentAndMonotone(t *testing.T) {
	var b topic.Broker
	const publishers, each = 2, 50000
	b.Retain[hoVal](topic.Retention{Count: publishers * each}) // nothing trimmed: the receiver gets all
	ch, cancel := b.Subscribe(hoFollow("h", 8)...)
	defer cancel()
	var wg sync.WaitGroup
	for range publishers {
		wg.Go(func() {
			for i := range each {
				b.Publish(hoVal{i})
			}
		})
	}
	recvd := make(chan struct{})
	go func() {
		defer close(recvd)
		for range publishers * each {
			<-ch
		}
	}()
	stop := make(chan struct{})
	var bad []string
	var statsDone sync.WaitGroup
	statsDone.Go(func() {
		var prev topic.SubscriptionStats
		prev.Follower = &topic.FollowerStats{}
		for {
			select {
			case <-stop:
				return
			default:
			}
			st := fsStats[hoVal](t, &b, "h")
			f := st.Follower
			switch {
			case f.Committed > f.Offset:
				bad = append(bad, fmt.Sprintf("committed %d > offset %d", f.Committed, f.Offset))
			case st.Sent < prev.Sent || f.Offset < prev.Follower.Offset || f.Committed < prev.Follower.Committed:
				bad = append(bad, fmt.Sprintf("went back: sent %d->%d offset %d->%d committed %d->%d", prev.Sent, st.Sent, prev.Follower.Offset, f.Offset, prev.Follower.Committed, f.Committed))
			case st.Sent > f.Offset:
				bad = append(bad, fmt.Sprintf("sent %d > offset %d", st.Sent, f.Offset))
			}
			if len(bad) > 10 {
				return
			}
			prev = st
		}
	})
	wg.Wait()
	<-recvd
	close(stop)
	statsDone.Wait()
	if len(bad) > 0 {
		t.Errorf("%d inconsistent snapshots, e.g. %v", len(bad), bad)
	}
}

// A durable follower that was handed values resumes right after them.
func TestFollowADurableHandedFollowerResumesAfterWhatItsChannelTook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[hoVal](topic.Retention{Count: 64})
		ch, cancel := b.Subscribe(hoFollow("d", 8)...)
		next := 0
		for round := range 4 {
			synctest.Wait() // caught up: handed values
			for range round {
				b.Publish(hoVal{next}) // handed, then received
				if v := <-ch; v.N != next {
					t.Fatalf("round %d: received %d, want %d", round, v.N, next)
				}
				next++
			}
			synctest.Wait()
			b.Publish(hoVal{next}) // handed, and left in the channel
			next++
			cancel()
			n := 0
			for range ch { // what the channel took, closed
				n++
			}
			if n != 1 {
				t.Fatalf("round %d: %d values in the channel at its close, want 1", round, n)
			}
			b.Publish(hoVal{next})
			ch, cancel = b.Subscribe(hoFollow("d", 8)...)
			if v := <-ch; v.N != next {
				t.Fatalf("round %d: resumed at %d, want %d", round, v.N, next)
			}
			next++
		}
		cancel()
	})
}

// Seeks racing a publisher: each value received follows the one before, or
// is the target of a Seek; once quiet, the follower is caught up with
// exact counts.
func TestFollowSeeksRacingPublicationsOfAHandedFollower(t *testing.T) {
	for _, buffer := range []int{0, 1, 4} {
		synctest.Test(t, func(t *testing.T) {
			const n = 20000
			var b topic.Broker
			b.Retain[hoVal](topic.Retention{Count: 1 << 15})
			ch, cancel := b.Subscribe(hoFollow("s", buffer)...)
			defer cancel()
			var mu sync.Mutex
			targets := map[int]bool{}
			var pub atomic.Int64
			var wg sync.WaitGroup
			wg.Go(func() {
				for i := range n {
					b.Publish(hoVal{i})
					pub.Store(int64(i + 1))
				}
			})
			wg.Go(func() {
				for range 300 {
					o := min(rand.IntN(int(pub.Load())+2), n-1)
					mu.Lock()
					targets[o] = true
					mu.Unlock()
					b.Seek[hoVal]("s", uint64(o))
					runtime.Gosched()
				}
			})
			sentinel := make(chan struct{})
			go func() {
				wg.Wait()
				b.Publish(hoVal{-1}) // offset n, after every Seek
				close(sentinel)
			}()
			prev, got := -1, 0
			for {
				v := <-ch
				got++
				if v.N == -1 {
					if prev != n-1 {
						t.Fatalf("buffer %d: the last value %d after %d", buffer, v.N, prev)
					}
					break
				}
				if v.N != prev+1 {
					mu.Lock()
					ok := targets[v.N]
					mu.Unlock()
					if !ok {
						t.Fatalf("buffer %d: %d after %d, not a Seek's target", buffer, v.N, prev)
					}
				}
				prev = v.N
			}
			<-sentinel
			synctest.Wait()
			st := fsStats[hoVal](t, &b, "s")
			if len(ch) != 0 || st.Sent != uint64(got) || st.Follower.Offset != n+1 || st.Follower.Lag != 0 || st.Follower.Committed != n+1 || st.Lost.Total() != 0 {
				t.Errorf("buffer %d: queued %d sent %d (received %d) offset %d lag %d committed %d lost %+v; want 0 %d %d 0 %d none", buffer, len(ch), st.Sent, got, st.Follower.Offset, st.Follower.Lag, st.Follower.Committed, st.Lost, got, n+1, n+1)
			}
		})
	}
}

// Retention that trims what a slow receiver has not reached: what is
// received is increasing, what is sent is received, and sent plus
// skipped is every publication.
func TestFollowHandOffWithSmallRetentionAndASlowReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[hoVal](topic.Retention{Count: 4})
		var skipped atomic.Uint64
		ch, cancel := b.Subscribe(hoFollow("r", 8,
			topic.OnLoss[hoVal](func(l topic.Loss[hoVal]) { skipped.Add(l.Count) }))...)
		synctest.Wait()
		prev, got, next := -1, 0, 0
		for round := range 50 {
			for range 3 + round%20 {
				b.Publish(hoVal{next})
				next++
			}
			for range round % 11 {
				select {
				case v := <-ch:
					if v.N <= prev {
						t.Fatalf("%d after %d", v.N, prev)
					}
					prev = v.N
					got++
				default:
				}
			}
			synctest.Wait()
		}
		for {
			synctest.Wait()
			select {
			case v := <-ch:
				if v.N <= prev {
					t.Fatalf("%d after %d", v.N, prev)
				}
				prev = v.N
				got++
				continue
			default:
			}
			break
		}
		st := fsStats[hoVal](t, &b, "r")
		if st.Sent != uint64(got) || st.Sent+st.Lost.Skipped != uint64(next) || skipped.Load() != st.Lost.Skipped || st.Follower.Lag != 0 {
			t.Errorf("sent %d received %d skipped %d (told %d) lag %d, published %d", st.Sent, got, st.Lost.Skipped, skipped.Load(), st.Follower.Lag, next)
		}
		cancel()
	})
}

// A receiver that publishes the next value itself (re-entrant).
func TestFollowAHandedReceiverPublishesTheNextValue(t *testing.T) {
	for _, buffer := range []int{0, 1, 4} {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			b.Retain[hoVal](topic.Retention{Count: 16})
			ch, cancel := b.Subscribe(hoFollow("e", buffer)...)
			defer cancel()
			synctest.Wait()
			done := make(chan struct{})
			go func() {
				defer close(done)
				for want := 0; want < 1000; want++ {
					v := <-ch
					if v.N != want {
						t.Errorf("received %d, want %d", v.N, want)
						return
					}
					b.Publish(hoVal{v.N + 1}) // from the receiver: the channel has no room or no receiver
				}
			}()
			b.Publish(hoVal{0})
			<-done
		})
	}
}

// Publishers racing Shutdown (synctest: a publisher that waits forever on
// the sealed log is a deadlock), with channel followers handed values and
// pull followers: every follower counts each publication once, and the
// channel followers' receivers got exactly Sent.
func TestFollowPublishersRacingShutdownWithHandedFollowers(t *testing.T) {
	for round := range 40 {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			b.Retain[hoVal](topic.Retention{Count: 4096})
			const publishers, each = 3, 300
			pull := b.Follow(topic.Name[hoVal]("pull"))
			_ = pull
			recv := make([]int, 3)
			var rwg sync.WaitGroup
			for i := range 3 {
				ch, _ := b.Subscribe(hoFollow(fmt.Sprint("c", i), i*2)...)
				rwg.Go(func() {
					for range ch {
						recv[i]++
					}
				})
			}
			synctest.Wait()
			var wg sync.WaitGroup
			for range publishers {
				wg.Go(func() {
					for i := range each {
						b.Publish(hoVal{i})
						if i%(round+1) == 0 {
							runtime.Gosched()
						}
					}
				})
			}
			for range round * 5 {
				runtime.Gosched()
			}
			if err := b.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			rwg.Wait()
			if st := fsStats[hoVal](t, &b, "pull"); st.Matched != publishers*each {
				t.Fatalf("round %d: pull matched %d", round, st.Matched)
			}
			for i := range 3 {
				st := fsStats[hoVal](t, &b, fmt.Sprint("c", i))
				if st.Matched != publishers*each || st.Sent != uint64(recv[i]) || st.Sent+st.Lost.Closed != publishers*each {
					t.Fatalf("round %d: c%d matched %d sent %d received %d closed %d, of %d", round, i, st.Matched, st.Sent, recv[i], st.Lost.Closed, publishers*each)
				}
			}
		})
	}
}

// Publishers racing the cancel of a handed Buffer(0) follower whose
// receiver stops and resumes: nothing sent after the close (no panic), no
// value twice, each publisher's in order.
func TestFollowCancelRacingPublishersWithAStopStartReceiver(t *testing.T) {
	for round := range 100 {
		var b topic.Broker
		b.Retain[hoVal](topic.Retention{Count: 1 << 12})
		ch, cancel := b.Subscribe(hoFollow("x", round%3)...)
		var wg sync.WaitGroup
		for p := range 2 {
			wg.Go(func() {
				for i := range 2000 {
					b.Publish(hoVal{p<<20 | i})
				}
			})
		}
		last := [2]int{-1, -1}
		got := 0
		for v := range ch {
			p, i := v.N>>20, v.N&(1<<20-1)
			if i <= last[p] {
				t.Fatalf("round %d: %d after %d", round, i, last[p])
			}
			last[p] = i
			got++
			if got%50 == 0 {
				runtime.Gosched() // the channel fills meanwhile
			}
			if got == 500+round*13 {
				go cancel()
			}
		}
		wg.Wait()
		b.Shutdown(context.Background())
	}
}

// A durable follower bound to a Context, whose context ends, is
// subscribed again with its name as soon as the name is free (the restart
// of a consumer): it must resume right after what its channel took, not
// receive again what the hand-off put in the old channel, nor pass over
// what the old one never read (in the first round, nothing committed).
func TestFollowADurableFollowerRestartedAfterItsContextEndsResumesAfterWhatItsChannelTook(t *testing.T) {
	var b topic.Broker
	b.Retain[hoVal](topic.Retention{Count: 1 << 16})
	next := 0 // the value, and offset, published next
	taken := 0
	var dup []string
	for round := range 300 {
		ctx, end := context.WithCancel(context.Background())
		ch, _ := b.Subscribe(hoFollow("d", 64, topic.Context[hoVal](ctx))...)
		for range 20 {
			runtime.Gosched() // its pump reads what there is and waits, handed values
		}
		for range 1 + round%40 {
			b.Publish(hoVal{next})
			next++
		}
		// What the old channel took, read by its receiver to the close.
		done := make(chan int)
		go func() {
			last := -1
			for v := range ch {
				last = v.N
			}
			done <- last
		}()
		end() // the AfterFunc cancels it; the pump frees the name once it has committed
		var ch2 <-chan hoVal
		var cancel2 func()
		for ch2 == nil { // as soon as the name is free
			func() {
				defer func() { _ = recover() }() // live still: try again
				ch2, cancel2 = b.Subscribe(hoFollow("d", 64)...)
			}()
		}
		last := <-done
		if last+1 > taken {
			taken = last + 1
		}
		b.Publish(hoVal{next}) // so that the new follower receives something
		next++
		v := <-ch2
		if v.N != taken {
			dup = append(dup, fmt.Sprintf("round %d: resumed at %d, the old channel took up to %d", round, v.N, taken-1))
		}
		cancel2() // waits for the commit of what its channel took, then closes it
		for w := range ch2 {
			v = w
		}
		taken = v.N + 1
	}
	if len(dup) > 0 {
		t.Errorf("%d restarts did not resume right after what the old channel took: %v", len(dup), dup[:min(len(dup), 5)])
	}
}

// A hand-off is for a receiver that keeps up: a publication that finds a
// value still in the channel of a hand-off just begun, though it has room,
// leaves it and those after it to the pump, which sends them in order;
// caught up again, the follower is handed values again.
func TestFollowAReceiverThatFallsBehindGoesBackToThePump(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[hoVal](topic.Retention{Count: 64})
		ch, cancel := b.Subscribe(hoFollow("h", 8)...)
		defer cancel()
		synctest.Wait() // caught up: handed values
		w := topic.Wakes[hoVal](&b, "h")
		b.Publish(hoVal{0}) // handed: the channel was empty
		synctest.Wait()
		if d := topic.Wakes[hoVal](&b, "h") - w; d != 0 {
			t.Fatalf("the pump was woken %d times by a value handed to an empty channel", d)
		}
		b.Publish(hoVal{1}) // the receiver has not taken 0: to the pump
		b.Publish(hoVal{2})
		synctest.Wait()
		if d := topic.Wakes[hoVal](&b, "h") - w; d != 1 {
			t.Fatalf("the pump was woken %d times by a receiver fallen behind, want once", d)
		}
		for want := range 3 {
			if v := <-ch; v.N != want {
				t.Fatalf("received %d, want %d", v.N, want)
			}
		}
		synctest.Wait() // the pump has caught up again, and waits
		w = topic.Wakes[hoVal](&b, "h")
		b.Publish(hoVal{3})
		if v := <-ch; v.N != 3 {
			t.Fatalf("received %d, want 3", v.N)
		}
		synctest.Wait()
		if d := topic.Wakes[hoVal](&b, "h") - w; d != 0 {
			t.Fatalf("caught up again, the pump was woken %d times", d)
		}
		st := handoffStats(t, &b)
		if st.Sent != 4 || st.Follower.Committed != 4 || st.Lost != (topic.Lost{}) {
			t.Errorf("sent %d, committed %d, lost %+v; want 4, 4, none", st.Sent, st.Follower.Committed, st.Lost)
		}
	})
}

// A receiver that has kept up a while may fall a few values behind, as a
// hiccup of its goroutine leaves them, and still be handed values: one for
// every 16 handed out since the hand-off began. One more than that, and
// the values go back to the pump; its counts stay exact either way.
func TestFollowAReceiverThatKeptUpRidesOutAHiccup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[hoVal](topic.Retention{Count: 64})
		ch, cancel := b.Subscribe(hoFollow("h", 8)...)
		defer cancel()
		synctest.Wait() // caught up: handed values
		w := topic.Wakes[hoVal](&b, "h")
		next := 0
		publish := func() {
			b.Publish(hoVal{next})
			next++
		}
		for range 32 { // kept up: each taken before the next
			publish()
			if v := <-ch; v.N != next-1 {
				t.Fatalf("received %d, want %d", v.N, next-1)
			}
		}
		// 32 handed out: a slack of 2. The third value finds two in the
		// channel, and is handed too.
		for range 3 {
			publish()
		}
		synctest.Wait()
		if d := topic.Wakes[hoVal](&b, "h") - w; d != 0 {
			t.Fatalf("the pump was woken %d times by a receiver two values behind after 32 taken", d)
		}
		publish() // three in the channel: to the pump
		synctest.Wait()
		if d := topic.Wakes[hoVal](&b, "h") - w; d != 1 {
			t.Fatalf("the pump was woken %d times by a receiver three values behind, want once", d)
		}
		for want := 32; want < next; want++ {
			if v := <-ch; v.N != want {
				t.Fatalf("received %d, want %d", v.N, want)
			}
		}
		synctest.Wait()
		st := handoffStats(t, &b)
		if st.Sent != uint64(next) || st.Follower.Committed != uint64(next) || st.Lost != (topic.Lost{}) {
			t.Errorf("sent %d, committed %d, lost %+v; want %d, %d, none", st.Sent, st.Follower.Committed, st.Lost, next, next)
		}
	})
}
