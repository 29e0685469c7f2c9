package topic_test

// Tests of channel followers (Subscribe with Follow), whose pump goroutine
// sends what the follower reads on the channel: a cancel closes the channel
// even while the pump is blocked, Shutdown waits for the pump and has its
// final counts, and the pump's OnLoss may cancel the subscription.

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/seedaa7df82c/topic"
)

// A channel follower's channel is closed once cancel returns, even while its
// pump is blocked sending; no send after.
func TestFollowChannelFollowerCancelWhilePumpBlockedClosesIt(t *testing.T) {
	for i := range 200 {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 4})
		ch, cancel := b.Subscribe(topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Buffer[fOrder](i%3))
		for n := range 10 {
			b.Publish(fOrder{n})
		}
		// take a few, in order
		prev := -1
		for range i % 4 {
			v := <-ch
			if v.N <= prev {
				t.Fatalf("out of order: %d after %d", v.N, prev)
			}
			prev = v.N
		}
		done := make(chan struct{})
		go func() { cancel(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("cancel hangs")
		}
		for v := range ch {
			if v.N <= prev {
				t.Fatalf("out of order: %d after %d", v.N, prev)
			}
			prev = v.N
		}
		b.Shutdown(context.Background())
	}
}

// Subscribe with Follow and a context already done returns a cancelled
// subscription, its channel closed (Context's promise), at once.
func TestFollowChannelFollowerWithDoneContextIsClosedAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	open := 0
	for range 200 {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 4})
		ch, _ := b.Subscribe(topic.Follow[fOrder](), topic.Context[fOrder](ctx))
		select {
		case _, ok := <-ch:
			if ok {
				t.Fatal("a value on a cancelled subscription")
			}
		default:
			open++
		}
	}
	if open > 0 {
		t.Errorf("the channel was still open when Subscribe returned in %d of 200", open)
	}
}

// After Shutdown returns, Subscriptions gives the final counts: the value a
// channel follower's pump held when Shutdown closed it is counted Closed by
// then, and its channel is closed.
func TestFollowChannelFollowerHasItsFinalCountsWhenShutdownReturns(t *testing.T) {
	notYet, openAfter := 0, 0
	for range 200 {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 4})
		ch, _ := b.Subscribe(topic.Follow[fOrder](), topic.Buffer[fOrder](0))
		b.Publish(fOrder{1})
		// let the pump take it and block in its send
		deadline := time.Now().Add(10 * time.Second)
		for b.Subscriptions()[0].Follower.Offset != 1 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Microsecond)
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		before := b.Subscriptions()[0].Lost
		select {
		case _, ok := <-ch:
			if ok {
				continue // taken: fine
			}
		default:
			openAfter++
		}
		time.Sleep(time.Millisecond)
		after := b.Subscriptions()[0].Lost
		if before != after {
			notYet++
		}
	}
	if notYet > 0 || openAfter > 0 {
		t.Errorf("after Shutdown returned: counts changed later in %d of 200, channel not closed in %d of 200", notYet, openAfter)
	}
}

// Without Buffer, a channel follower's capacity is one.
func TestFollowChannelFollowerDefaultCapacityIsOne(t *testing.T) {
	var b topic.Broker
	b.Retain[fOrder](topic.Retention{Count: 4})
	ch, cancel := b.Subscribe(topic.Follow[fOrder]())
	defer cancel()
	if cap(ch) != 1 {
		t.Errorf("capacity %d, want 1", cap(ch))
	}
}

// OnLoss "may publish, subscribe and cancel". A channel follower's OnLoss
// runs on its pump's goroutine (the Skipped report); cancelling the
// subscription from there must not wait for ever for the pump to close the
// channel.
func TestFollowChannelFollowerOnLossMayCancelItself(t *testing.T) {
	var b topic.Broker
	b.Retain[fVal](topic.Retention{Count: 2})
	var cancel func()
	var ready sync.WaitGroup
	ready.Add(1)
	told := make(chan topic.Loss[fVal], 1)
	ch, c := b.Subscribe(topic.Follow[fVal](), topic.Buffer[fVal](0),
		topic.OnLoss(func(l topic.Loss[fVal]) {
			if l.Cause != topic.Skipped {
				return
			}
			ready.Wait()
			cancel() // from the pump's goroutine
			told <- l
		}))
	cancel = c
	ready.Done()
	b.Publish(fVal{0}) // the pump takes it and waits for a receiver
	for n := 1; n <= 10; n++ {
		b.Publish(fVal{n}) // 1 to 8 are trimmed
	}
	ok := fWithin(t, 10*time.Second, "OnLoss calling its own cancel", func() {
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

// Shutdown "waits for the handlers' goroutines to end"; the seam's
// Goroutines counts a broker goroutine "until just before its stop function
// or Shutdown may return". A channel follower's pump is a goroutine of the
// broker too (it is counted), but Shutdown returns while it still runs:
// here it reports the value it held (Closed) to OnLoss after Shutdown has
// returned, and is still counted. (Without the gate the window is short:
// a loop of 1500 Shutdowns finds Goroutines() != 0 just after Shutdown in
// one to three of them.)
func TestFollowShutdownWaitsForAChannelFollowersPump(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 4})
		gate := make(chan struct{})
		var closedTold atomic.Int32
		b.Subscribe(topic.Follow[fVal](), topic.Buffer[fVal](0), topic.OnLoss(func(l topic.Loss[fVal]) {
			if l.Cause == topic.Closed {
				<-gate
				closedTold.Add(1)
			}
		}))
		b.Publish(fVal{1})
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

// fcSpin busies the goroutine for about d, without yielding: it lets the
// racing tests below land a call at varied points of a pump's work.
func fcSpin(d time.Duration) {
	for t0 := time.Now(); time.Since(t0) < d; {
	}
}

// Cancelling "after it returns nothing is ever sent on the channel again"
// (Subscribe), also when a channel follower's own OnLoss function cancels
// it: that runs on the pump's goroutine, in the read that skipped, and
// cancel returns at once there ("it closes the channel once that
// returns"). What that read found after the gap must not be sent after
// cancel returned.
func TestFollowChannelFollowerCancelledFromItsOnLossSendsNothingAfter(t *testing.T) {
	const rounds = 100
	sentIn, sent := 0, 0
	for range rounds {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 4})
		for n := range 100 {
			b.Publish(fVal{n}) // all but the last few trimmed
		}
		var cancel func()
		var ready sync.WaitGroup
		ready.Add(1)
		returned := make(chan struct{})
		var once sync.Once
		ch, c := b.Subscribe(topic.Follow[fVal](), topic.Replay[fVal](topic.At(0)), topic.Buffer[fVal](16),
			topic.OnLoss(func(l topic.Loss[fVal]) {
				if l.Cause != topic.Skipped {
					return
				}
				ready.Wait()
				cancel() // from the pump's goroutine: returns at once
				once.Do(func() { close(returned) })
			}))
		cancel = c
		ready.Done()
		n := 0
		fWithin(t, 10*time.Second, "cancel from OnLoss", func() {
			<-returned
			for range ch { // all sent after cancel returned: the first read skipped
				n++
			}
		})
		if n > 0 {
			sentIn++
			sent += n
		}
		b.Shutdown(context.Background())
	}
	if sentIn > 0 {
		t.Errorf("in %d of %d rounds the pump sent values (%d in all) after cancel, called from its OnLoss, returned", sentIn, rounds, sent)
	}
}

// An OnLoss function that calls Shutdown from a channel follower's pump, in
// the read that skipped: what it received and what it counted still add
// up to what was published.
func TestFollowChannelFollowerShutdownFromItsOnLossCountsEveryValueOnce(t *testing.T) {
	for range 100 {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 4})
		const n = 100
		for i := range n {
			b.Publish(fVal{i})
		}
		var once sync.Once
		ch, _ := b.Subscribe(topic.Follow[fVal](), topic.Replay[fVal](topic.At(0)), topic.Buffer[fVal](16),
			topic.OnLoss(func(l topic.Loss[fVal]) {
				if l.Cause == topic.Skipped {
					once.Do(func() { b.Shutdown(context.Background()) })
				}
			}))
		got := uint64(0)
		fWithin(t, 10*time.Second, "Shutdown from OnLoss", func() {
			for range ch {
				got++
			}
		})
		b.Shutdown(context.Background())
		st := b.Subscriptions()[0]
		if got+st.Lost.Total() != n {
			t.Fatalf("received %d, lost %+v: want %d in all", got, st.Lost, n)
		}
	}
}

// A channel follower cancelled from another goroutine while its pump sends
// what its buffered channel has room for: once cancel returns, the channel
// is closed and holds what was sent; nothing is sent after, and what was
// sent is in order.
func TestFollowBufferedChannelFollowerSendsNothingAfterCancelReturns(t *testing.T) {
	for round := range 300 {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 64})
		for n := range 48 {
			b.Publish(fOrder{n})
		}
		ch, cancel := b.Subscribe(topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Buffer[fOrder](64))
		fcSpin(time.Duration(round%40) * time.Microsecond)
		cancel()
		held := len(ch)
		got, prev := 0, -1
		for v := range ch {
			if v.N != prev+1 {
				t.Fatalf("round %d: %d after %d", round, v.N, prev)
			}
			prev = v.N
			got++
		}
		if got != held {
			t.Fatalf("round %d: the channel held %d when cancel returned, gave %d", round, held, got)
		}
		b.Shutdown(context.Background())
	}
}

// Broker.Seek moves a named channel follower. Its pump used to hold at
// most one value read before the Seek, which it sent after: after Seek
// returns, the channel gains at most that one value from before the Seek
// (here, a Seek far ahead, every value it gains).
func TestFollowChannelFollowerSendsAtMostOneValueFromBeforeASeekAfterIt(t *testing.T) {
	const rounds = 2000
	hits, worst := 0, 0
	for round := range rounds {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 64})
		for n := range 32 {
			b.Publish(fVal{n})
		}
		ch, cancel := b.Subscribe(topic.Follow[fVal](), topic.Name[fVal]("s"),
			topic.Replay[fVal](topic.Earliest()), topic.Buffer[fVal](64))
		fcSpin(time.Duration(round%50) * time.Microsecond)
		b.Seek[fVal]("s", 1<<40)
		held := len(ch)
		cancel() // waits for the pump
		if extra := len(ch) - held; extra > 1 {
			hits++
			worst = max(worst, extra)
		}
		b.Shutdown(context.Background())
	}
	if hits > 0 {
		t.Errorf("in %d of %d rounds the channel gained more than one value from before a Seek after it returned (up to %d)", hits, rounds, worst)
	}
}

// An unbuffered channel follower sends and commits one value at a time, as
// Follow documents for one that must resume where its receiver stopped:
// once offset 1 is received, offset 0 is committed. (A buffered one commits
// each batch once the channel holds it all, and may trail by a batch.)
func TestFollowUnbufferedChannelFollowerHasCommittedTheValueBeforeTheOneReceived(t *testing.T) {
	const rounds = 1000
	late := 0
	for range rounds {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 64})
		for n := range 16 {
			b.Publish(fVal{n})
		}
		ch, cancel := b.Subscribe(topic.Follow[fVal](), topic.Name[fVal]("c"),
			topic.Replay[fVal](topic.Earliest()), topic.Buffer[fVal](0))
		<-ch
		<-ch
		if c := b.Subscriptions()[0].Follower.Committed; c < 1 {
			late++
		}
		cancel()
		b.Shutdown(context.Background())
	}
	if late > 0 {
		t.Errorf("in %d of %d rounds, offset 0 was not committed once offset 1 was received", late, rounds)
	}
}

// fcBig is a retained type whose values hold memory of their own.
type fcBig struct{ P *[256]byte }

// A channel follower's pump keeps no more than one value it read alive
// (it kept the one of its last read, before it sent several at once):
// not the values a read found and dropped because a Seek moved the
// follower meanwhile. A follower moved far ahead, waiting, must not pin
// values its log has trimmed.
func TestFollowChannelFollowerKeepsNoValuesASeekDropped(t *testing.T) {
	const per, n = 300, 32
	// Under -short (make race) two batches: make stress runs all five.
	batches := 5
	if testing.Short() {
		batches = 2
	}
	type round struct {
		b      *topic.Broker
		ch     <-chan fcBig
		cancel func()
		w      [n]weak.Pointer[[256]byte]
	}
	worst, hits := 0, 0
	for batch := range batches {
		rs := make([]round, per)
		for i := range rs {
			r := &rs[i]
			r.b = new(topic.Broker)
			r.b.Retain[fcBig](topic.Retention{Count: n})
			for k := range n {
				p := new([256]byte)
				r.w[k] = weak.Make(p)
				r.b.Publish(fcBig{p})
			}
			r.ch, r.cancel = r.b.Subscribe(topic.Follow[fcBig](), topic.Name[fcBig]("m"),
				topic.Replay[fcBig](topic.Earliest()), topic.Buffer[fcBig](64))
			fcSpin(time.Duration((batch*per+i)%50) * time.Microsecond)
			r.b.Seek[fcBig]("m", 1<<40)
			for range 1024 {
				r.b.Publish(fcBig{}) // the log trims the values above
			}
		}
		for i := range rs {
			for len(rs[i].ch) > 0 {
				<-rs[i].ch // what was sent: the receiver's, dropped
			}
		}
		runtime.GC()
		runtime.GC()
		for i := range rs {
			alive := 0
			for _, w := range rs[i].w {
				if w.Value() != nil {
					alive++
				}
			}
			if alive > 1 {
				hits++
				worst = max(worst, alive)
			}
			rs[i].cancel()
			rs[i].b.Shutdown(context.Background())
		}
	}
	if hits > 0 {
		t.Errorf("in %d of %d rounds a waiting channel follower kept more than one trimmed value alive (up to %d)", hits, batches*per, worst)
	}
}

// Broker.Seek called from a named channel follower's OnLoss, on its pump's
// goroutine during the read that skipped: the pump used to send the one
// record that read returned, then read from where Seek moved it. Here the
// Seek moves it far ahead: at most one value from before it is sent.
func TestFollowChannelFollowerSeekFromItsOnLossSendsAtMostTheValueInHand(t *testing.T) {
	var b topic.Broker
	b.Retain[fVal](topic.Retention{Count: 4})
	for n := range 100 {
		b.Publish(fVal{n}) // all but the last few trimmed
	}
	sought := make(chan struct{})
	var once sync.Once
	ch, cancel := b.Subscribe(topic.Follow[fVal](), topic.Name[fVal]("o"), topic.Replay[fVal](topic.At(0)),
		topic.Buffer[fVal](16), topic.OnLoss(func(l topic.Loss[fVal]) {
			if l.Cause == topic.Skipped {
				once.Do(func() {
					b.Seek[fVal]("o", 1<<40) // from the pump's goroutine
					close(sought)
				})
			}
		}))
	var got []fVal
	fWithin(t, 10*time.Second, "Seek from OnLoss", func() {
		<-sought
		cancel() // waits for the pump
		for v := range ch {
			got = append(got, v)
		}
	})
	if len(got) > 1 {
		t.Errorf("after a Seek far ahead from OnLoss, the channel got %v from before it; want at most one", got)
	}
	b.Shutdown(context.Background())
}
