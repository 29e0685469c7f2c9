package topic_test

// Tests of the hand-off of a caught-up channel follower: each publication
// sends to its channel directly, and its pump is woken only when the
// channel is full, by a Seek or at its end; nothing is lost, duplicated or
// reordered across the changes, and its counts are exact throughout.

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/seedaa7df82c/topic"
)

type hoVal struct{ N int }

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
			ch, cancel := b.Subscribe(topic.Follow[hoVal](), topic.Name[hoVal]("h"), topic.Buffer[hoVal](buffer))
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
		ch, cancel := b.Subscribe(topic.Follow[hoVal](), topic.Name[hoVal]("h"), topic.Buffer[hoVal](3))
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
		ch, cancel := b.Subscribe(topic.Follow[hoVal](), topic.Name[hoVal]("h"), topic.Buffer[hoVal](16))
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
		ch, cancel := b.Subscribe(topic.Follow[hoVal](), topic.Name[hoVal]("h"), topic.Buffer[hoVal](round%5))
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
