package topic_test

// Tests of channel followers (Subscribe with Follow), whose pump goroutine
// sends what the follower reads on the channel: a cancel closes the channel
// even while the pump is blocked, Shutdown waits for the pump and has its
// final counts, and the pump's OnLoss may cancel the subscription.

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

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
