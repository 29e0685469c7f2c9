package topic

// Tests of freezeFull, the Full count a subscription's close freezes: a
// publication that finds every buffer full counts its drop outside the
// guard, so a publisher held up there may count it after the cancel or
// Shutdown has returned. Each test says which mutant or bug it catches.

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

type freezeInt int

// fullOutlet subscribes to freezeInt with a buffer of one, fills it, and returns
// the subscription's cancel and the outlet that lists it on the route: what
// a publisher that loaded the route then holds.
func fullOutlet(t *testing.T, b *Broker) (*outlet[freezeInt], <-chan freezeInt, func()) {
	t.Helper()
	ch, cancel := b.Subscribe(Buffer[freezeInt](1))
	b.Publish(freezeInt(0)) // the buffer is full from now on
	r := routeOf[freezeInt](b)
	if r == nil || len(r.direct) != 1 || r.direct[0].channel() == nil || (<-chan freezeInt)(r.direct[0].sub.ch) != ch {
		t.Fatal("the subscription is not the one live outlet of its route")
	}
	return &r.direct[0], ch, cancel
}

// A subscription's close freezes its Full count (freezeFull) because a
// publication that finds every buffer full counts its drop outside the
// guard (countFull): a publisher that found the outlet live before the
// cancel buried it may be held up there (preempted, its thread descheduled)
// and count the drop once the cancel has returned. A freezeFull that loads
// the count, then stores it, leaves a gap: a drop counted between the two is
// not in the frozen count, but a read of the counts (Subscriptions and Watch read them without
// Broker.mu, and so concurrently with a cancel) that lands between them
// still sees it, and reports more than the final count. The Full count then
// goes down, and Watch, which reports differences (Lost.minus), reports the
// subscription's last incident as a Full of nearly 2^64.
//
// Each round plays the held-up publishers (they count a drop on the outlet
// they found live, as countFull does) interleaved with such a reader, while
// the subscription is cancelled. The loss counts are striped, as they are
// once two publishers of the saturated subscription met (addStriped): the
// load in freezeFull then reads every stripe, and the gap is wide. Catches
// that freezeFull (the test fails against it).
func TestFullCountReadDuringACancelIsNeverMoreThanTheFinalOne(t *testing.T) {
	// It ends at the first round that finds the bug: against that
	// freezeFull, within 0.7 s in each of 5 runs (within 0.02 s with -race).
	d := 3 * time.Second
	if testing.Short() {
		d = 1500 * time.Millisecond
	}
	rounds, bad := 0, 0
	var first string
	for start := time.Now(); bad == 0 && (rounds < 100 || time.Since(start) < d); rounds++ {
		var b Broker
		o, _, cancel := fullOutlet(t, &b)
		s := o.sub
		s.lost.addStriped(Full) // as the first two drops counted at once do
		var seen Lost
		var reads atomic.Int64
		var halt atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !halt.Load() {
				o.sub.lost.addFull() // a held-up publisher's drop (countFull)
				if l := s.stats().Lost; l.Full > seen.Full {
					seen = l // as Subscriptions and Watch read it
				}
				reads.Add(1)
			}
		}()
		for n := reads.Load(); reads.Load() < n+1+int64(rounds%4); {
			runtime.Gosched()
		}
		cancel()
		halt.Store(true)
		<-done
		final := s.stats().Lost
		if seen.Full > final.Full {
			bad++
			first = fmt.Sprintf("round %d: Full read as %d during the cancel, %d once it returned; Watch would report the last incident as Lost %+v",
				rounds, seen.Full, final.Full, final.minus(seen))
		}
	}
	if bad > 0 {
		t.Errorf("a Full count read while a cancel froze it was more than the frozen count, after %d rounds: %s", rounds, first)
	}
}

// The frozen Full count must keep every drop of a publication that returned
// before the cancel, also once the counts are striped, and hide a drop
// counted after the cancel by a publisher held up since it found the outlet
// live; the seal of Shutdown freezes Full alike but not Closed, which
// publications after Shutdown still count. Catches the mutants: no
// freezeFull (the late drop shows); freezeFull reading the base counters
// only (striped drops lost); freezeFull storing the count without its +1 (one
// drop lost, or the count not frozen when it is 0); a freeze of every cause
// (Closed no longer counted after Shutdown).
func TestFrozenFullCountKeepsEveryEarlierDropAndNoLaterOne(t *testing.T) {
	for _, striped := range []bool{false, true} {
		var b Broker
		o, ch, cancel := fullOutlet(t, &b)
		s := o.sub
		want := uint64(0)
		if striped {
			s.lost.addStriped(Full) // a drop counted on the stripes
			want++
		}
		for i := range 9 {
			b.Publish(freezeInt(i + 1)) // dropped: the buffer is full
		}
		want += 9
		cancel()
		if got := s.stats().Lost.Full; got != want {
			t.Errorf("striped %v: Full is %d once the cancel returned, want %d", striped, got, want)
		}
		o.sub.lost.addFull() // a publisher held up in countFull since before the cancel
		if got := s.stats().Lost.Full; got != want {
			t.Errorf("striped %v: Full is %d after a drop counted once the cancel returned, want %d (frozen)", striped, got, want)
		}
		if v, ok := <-ch; !ok || v != 0 {
			t.Errorf("striped %v: received %v, %v; want the value queued before the cancel", striped, v, ok)
		}
		if _, ok := <-ch; ok {
			t.Errorf("striped %v: the channel is open after the cancel", striped)
		}
	}

	var b Broker
	b.Subscribe(Buffer[freezeInt](1))
	for i := range 3 {
		b.Publish(freezeInt(i)) // one queued, two dropped
	}
	if err := b.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	b.Publish(freezeInt(3)) // reaches the sealed subscription: Closed
	b.Publish(freezeInt(4))
	found := false
	for _, st := range b.Subscriptions() {
		if st.Type != reflect.TypeFor[freezeInt]() {
			continue
		}
		found = true
		if st.Lost.Full != 2 || st.Lost.Closed != 2 {
			t.Errorf("after Shutdown and two more publications: Lost %+v, want Full 2 and Closed 2", st.Lost)
		}
	}
	if !found {
		t.Error("Subscriptions does not list the subscription Shutdown closed")
	}
}

// A publication that found the buffer full before Shutdown closed the
// subscription, and counts its drop without the guard only after (a
// publisher held up in countFull, or in sendDirect's drop path), is counted
// as Closed: Shutdown counts every publication it ended, so that once the
// publishers stop the values published equal those received plus those
// lost. The Full count stays what the close froze. (A frozen Full count
// that hides such a drop counts it nowhere: publishers racing Shutdown then
// came one to three values short in about one run of five.)
// Catches the mutants: a seal that freezes as a cancel does (the drop is
// lost), and a load that adds the late drops to Full instead.
func TestADropCountedAfterShutdownClosedTheSubscriptionIsClosed(t *testing.T) {
	for _, striped := range []bool{false, true} {
		var b Broker
		o, ch, _ := fullOutlet(t, &b)
		s := o.sub
		want := Lost{Full: 1}
		if striped {
			s.lost.addStriped(Full) // a drop counted on the stripes
			want.Full++
		}
		b.Publish(freezeInt(1)) // dropped: the buffer is full
		if err := b.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := s.stats().Lost; got != want {
			t.Errorf("striped %v: Lost %+v once Shutdown returned, want %+v", striped, got, want)
		}
		s.lost.addFull() // two publishers held up since before the seal
		s.lost.addStriped(Full)
		b.Publish(freezeInt(2)) // after the seal: Closed
		want.Closed = 3
		if got := s.stats().Lost; got != want {
			t.Errorf("striped %v: Lost %+v after two drops counted late and a publication, want %+v", striped, got, want)
		}
		if v, ok := <-ch; !ok || v != 0 {
			t.Errorf("striped %v: received %v, %v; want the value queued before Shutdown", striped, v, ok)
		}
		if _, ok := <-ch; ok {
			t.Errorf("striped %v: the channel is open after Shutdown", striped)
		}
	}
}

// A handler stopped before Shutdown keeps the rule of a cancel: its stop
// froze its Full count, unmarked, and Shutdown, which still waits for the
// handler to finish its queue, does not freeze it again. So a drop that a
// publisher held up since before the stop counts late, outside the guard,
// stays hidden, before and after Shutdown: it is one of a publication after
// the stop. (Counted as Closed, it would count a publication the handler's
// stop, not Shutdown, ended.)
func TestALateDropOnAHandlerStoppedBeforeShutdownStaysHidden(t *testing.T) {
	var b Broker
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	stop := b.Handle(func(ctx context.Context, v freezeInt) error {
		if v == 1 {
			started <- struct{}{}
			<-release
		}
		return nil
	}, Buffer[freezeInt](1))
	b.Publish(freezeInt(1)) // taken by the worker, which waits
	<-started
	b.Publish(freezeInt(2)) // queued
	b.Publish(freezeInt(3)) // dropped: the queue is full
	// The handler's subscription, as a publisher that loaded the route
	// before the stop holds it.
	var s *sub[freezeInt]
	b.mu.Lock()
	for h := range b.handlers {
		s = h.subscription().(*sub[freezeInt])
	}
	b.mu.Unlock()
	stopped := make(chan struct{})
	go func() {
		stop() // waits for the worker, which waits for release
		close(stopped)
	}()
	for s.lost.full.Load() == 0 || s.lost.full.Load() == frozeNow {
		runtime.Gosched() // until the stop's close has frozen the count
	}
	want := Lost{Full: 1}
	s.lost.addFull() // the held-up publisher counts its drop
	if got := s.stats().Lost; got != want {
		t.Errorf("Lost %+v after a drop counted late once the stop closed the queue, want %+v", got, want)
	}
	close(release)
	if err := b.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-stopped
	s.lost.addFull() // another, counted after Shutdown
	if got := s.stats().Lost; got != want {
		t.Errorf("Lost %+v after Shutdown and another late drop, want %+v", got, want)
	}
	if got := s.stats().Handler; got == nil || got.Handled != 2 {
		t.Errorf("handler stats %+v, want the two values accepted before the stop handled", got)
	}
}
