package topic_test

// Tests of runtime.Goexit (which t.FailNow calls) on a handler's
// goroutine: in its function, in an OnLoss or From function that goroutine
// runs, and twice. The handler ends, its stop, Shutdown and Settle return,
// and nothing it held or had queued is lost silently.

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/seedaa7df82c/topic"
)

type (
	hValue     struct{ N int }
	hConverted struct{ N int }
)

func countCause[T any](ls []topic.Loss[T], c topic.Cause) int {
	n := 0
	for _, l := range ls {
		if l.Cause == c {
			n++
		}
	}
	return n
}

// A handler whose function calls runtime.Goexit (t.FailNow does) on one
// value: the worker ends, the value in hand is Errored, the subscription is
// cancelled, and what it had queued is Discarded, all reported to OnLoss;
// what is published after is not for it any more.
func TestGoexitInAHandlerLosesNothingSilently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		var handled atomic.Int64
		var losses hLosses[valA]
		queued := make(chan struct{})
		stop := b.Handle(func(_ context.Context, v valA) error {
			if v.N == 0 {
				<-queued // the other four are queued, not published after the end
				runtime.Goexit()
			}
			handled.Add(1)
			return nil
		}, topic.Name[valA]("h"), topic.Buffer[valA](16), losses.hook())
		for i := range 5 {
			b.Publish(valA{i})
		}
		close(queued)
		stop() // returns: the worker has ended
		if hListed(&b, "h") {
			t.Error("the handler is still listed after its worker ended")
		}
		b.Publish(valA{10})
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := handled.Load(); n != 0 {
			t.Errorf("handled %d, want 0", n)
		}
		if got, want := losses.count(topic.Errored), uint64(1); got != want {
			t.Errorf("%d Errored, want the value in hand", got)
		}
		if got := losses.count(topic.Discarded); got != 4 {
			t.Errorf("%d Discarded, want the 4 queued", got)
		}
	})
}

// runtime.Goexit in an OnLoss function that the handler's goroutine runs
// (as t.FailNow there would) ends the handler as one in f does: nothing it
// had queued is lost silently, and it leaves Subscriptions.
func TestGoexitInAHandlersOnLossLosesNothingSilently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		gate := make(chan struct{})
		handled := 0
		var lost []topic.Loss[hValue]
		b.Handle(func(_ context.Context, v hValue) error {
			if v.N == 0 {
				<-gate
				return errors.New("fail")
			}
			handled++
			return nil
		}, topic.Buffer[hValue](16), topic.OnLoss(func(l topic.Loss[hValue]) {
			lost = append(lost, l)
			if l.Cause == topic.Errored {
				runtime.Goexit()
			}
		}))
		for i := range 5 {
			b.Publish(hValue{i})
		}
		close(gate)
		synctest.Wait()
		if n := len(b.Subscriptions()); n != 0 {
			t.Errorf("%d subscriptions listed once the handler's goroutine ended, want 0", n)
		}
		if err := b.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if handled != 0 || len(lost) != 5 || lost[0].Cause != topic.Errored || countCause(lost, topic.Discarded) != 4 {
			t.Errorf("handled %d, reported to OnLoss %+v; want the first Errored, then 4 Discarded", handled, lost)
		}
	})
}

// The same from a From function that the handler's dead letter reaches.
func TestGoexitInAFromOfADeadLetterEndsTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		gate := make(chan struct{})
		_, cancel := b.Subscribe(topic.From(func(topic.DeadLetter[hValue]) (hConverted, bool) {
			runtime.Goexit()
			return hConverted{}, true
		}))
		defer cancel()
		var lost []topic.Loss[hValue]
		b.Handle(func(_ context.Context, v hValue) error {
			<-gate
			return errors.New("fail")
		}, topic.Buffer[hValue](16), topic.Retry[hValue](topic.RetryPolicy{Attempts: 1}),
			topic.OnLoss(func(l topic.Loss[hValue]) { lost = append(lost, l) }))
		for i := range 5 {
			b.Publish(hValue{i})
		}
		close(gate)
		synctest.Wait()
		for _, s := range b.Subscriptions() {
			if s.Handler != nil {
				t.Errorf("the handler is listed after its goroutine ended: %+v", s)
			}
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(lost) != 4 || countCause(lost, topic.Discarded) != 4 {
			t.Errorf("reported to OnLoss %+v; want the 4 queued after the dead letter, Discarded", lost)
		}
	})
}

// runtime.Goexit in f, then again in the OnLoss function told of it: the
// handler still ends, so stop, Shutdown and Settle return.
func TestGoexitInFAndInItsOnLossStillEndsTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		reports := 0
		stop := b.Handle(func(context.Context, hValue) error {
			runtime.Goexit()
			return nil
		}, topic.Buffer[hValue](8), topic.OnLoss(func(topic.Loss[hValue]) {
			reports++
			runtime.Goexit()
		}))
		for i := range 3 {
			b.Publish(hValue{i})
		}
		synctest.Wait()
		stop()
		if err := b.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := b.Settle(context.Background()); err != nil {
			t.Errorf("Settle after Shutdown: %v", err)
		}
		if reports != 1 {
			t.Errorf("%d reports to OnLoss, want 1 (it ended the goroutine)", reports)
		}
	})
}
