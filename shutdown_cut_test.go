package topic

// Tests of the cut of Shutdown's drain: a cut that began before seal is the
// outcome, whatever the drain found meanwhile. They are in package topic: the
// first two hold cutShort in the middle of its discards, through a handler
// whose discardNow waits, to make the race it fixed deterministic, and the
// others read whether each handler was told to discard.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

type (
	crJob  struct{ N int }
	crMid  struct{ N int }
	crLast struct{ N int }
	crIn   struct{ N int }
)

var errCrNotCalled = errors.New("the inside handler's value was discarded before its call")

// crDiscarding reports whether the handler was told to discard (by a cut of
// Shutdown's drain, here: no test of this file uses DiscardOnStop).
func (h *handler[T]) crDiscarding() bool { return h.discarding.Load() }

// crGated is a handler as the drain sees it whose discardNow, which
// cutShort calls inside cutOnce.Do before it sets cutErr and closes cut,
// discards in the handler and then runs hold: the window in which a cut
// came as the drain found the handlers idle, held open while hold runs.
type crGated struct {
	handlerRef
	once sync.Once
	hold func()
}

func (g *crGated) discardNow() {
	g.handlerRef.discardNow()
	g.once.Do(g.hold)
}

// crGate replaces the broker's one handler, as the drain will see it, by a
// crGated one.
func crGate(t *testing.T, b *Broker, hold func()) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.handlers) != 1 {
		t.Fatalf("crGate: %d handlers, want 1", len(b.handlers))
	}
	for h := range b.handlers {
		delete(b.handlers, h)
		b.handlers[&crGated{handlerRef: h, hold: hold}] = struct{}{}
	}
}

// crInStack reports whether a goroutine's stack shows fn, polling for up to
// limit.
func crInStack(fn string, limit time.Duration) bool {
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(limit); ; {
		n := runtime.Stack(buf, true)
		if bytes.Contains(buf[:n], []byte(fn)) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// The frame of drain.seal, as a stack trace shows it.
const crSealFrame = "topic.(*drain).seal("

// crWithin returns what f returns, or fails the test if f takes longer
// than 10s (a hang).
func crWithin[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	got := make(chan T, 1)
	go func() { got <- f() }()
	select {
	case v := <-got:
		return v
	case <-time.After(10 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("%s hung for 10s:\n%s", what, buf[:runtime.Stack(buf, true)])
		panic("unreachable")
	}
}

// crStats returns the snapshot of the subscription named name.
func crStats(t *testing.T, b *Broker, name string) SubscriptionStats {
	t.Helper()
	for _, st := range b.Subscriptions() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no subscription named %q in the snapshot", name)
	return SubscriptionStats{}
}

// crDiscardingHandlers returns how many of the drain's handlers were told to
// discard, of how many.
func crDiscardingHandlers(b *Broker) (discarding, of int) {
	b.mu.Lock()
	d := b.drain
	b.mu.Unlock()
	for _, h := range d.handlers {
		if g, ok := h.(*crGated); ok {
			h = g.handlerRef
		}
		if h.(interface{ crDiscarding() bool }).crDiscarding() {
			discarding++
		}
	}
	return discarding, len(d.handlers)
}

// A cut racing the drain's quiescence, made deterministic: the cut is held after the
// stuck handler's discardNow (its call returns as its context is cancelled,
// it discards its queue, and goes idle) until the drain, finding the
// handlers quiescent in that window, has reached seal. Every Shutdown must
// return the error of the context that cut the drain: the handler's values
// were discarded. (Before seal took the cut as its outcome, each
// returned nil.)
//
// cutter "deadline": the Shutdown whose deadline passes cuts; "ended": a
// second Shutdown, with a context ended before the call, cuts the drain the
// first (context.Background) began.
func TestACutHeldWhileTheDrainFindsQuiescenceIsTheOutcome(t *testing.T) {
	for _, cutter := range []string{"deadline", "ended"} {
		t.Run(cutter, func(t *testing.T) {
			for run := range 20 {
				var b Broker
				stuck := make(chan struct{})
				var handled atomic.Int64
				var mu sync.Mutex
				var losses []Loss[crJob]
				b.Handle(func(ctx context.Context, j crJob) error {
					if j.N == 0 {
						close(stuck)
						<-ctx.Done()
						return ctx.Err()
					}
					handled.Add(1)
					return nil
				}, Name[crJob]("stuck"), Buffer[crJob](8), OnLoss(func(l Loss[crJob]) {
					mu.Lock()
					defer mu.Unlock()
					losses = append(losses, l)
				}))
				sealed := false // written by the cutting Shutdown's goroutine, this one
				crGate(t, &b, func() { sealed = crInStack(crSealFrame, 10*time.Second) })
				for i := range 4 {
					b.Publish(crJob{i})
				}
				<-stuck

				bg := make(chan error, 1)
				go func() { bg <- b.Shutdown(context.Background()) }()
				var want, err error
				switch cutter {
				case "deadline":
					want = context.DeadlineExceeded
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
					err = crWithin(t, "Shutdown", func() error { return b.Shutdown(ctx) })
					cancel()
				case "ended":
					want = context.Canceled
					<-b.Done() // the drain has begun: the cut is not beginDrain's
					ctx, cancel := context.WithCancel(context.Background())
					cancel()
					err = crWithin(t, "Shutdown", func() error { return b.Shutdown(ctx) })
				}
				if !sealed {
					t.Fatalf("run %d: setup: the drain did not reach seal while the cut was held", run)
				}
				if err != want {
					t.Errorf("run %d: the cutting Shutdown = %v, want %v", run, err, want)
				}
				if err := crWithin(t, "Shutdown(Background)", func() error { return <-bg }); err != want {
					t.Errorf("run %d: the concurrent Shutdown(Background) = %v, want the drain's %v", run, err, want)
				}
				if err := b.Shutdown(context.Background()); err != want {
					t.Errorf("run %d: a later Shutdown = %v, want the drain's %v", run, err, want)
				}
				// The Background call waited for the handler: its counts are final.
				st := crStats(t, &b, "stuck")
				mu.Lock()
				nl := len(losses)
				mu.Unlock()
				if handled.Load() != 0 || st.Handler.Handled != 0 || st.Lost.Discarded != 4 || nl != 4 {
					t.Errorf("run %d: handled %d (counted %d), Discarded %d, %d reported; want 0, 0, 4, 4",
						run, handled.Load(), st.Handler.Handled, st.Lost.Discarded, nl)
				}
				if n, of := crDiscardingHandlers(&b); n != of {
					t.Errorf("run %d: %d of %d handlers discarding after a cut", run, n, of)
				}
			}
		})
	}
}

// The same window seen from a Shutdown called inside another handler's
// function: the drain, finding the stuck handler idle once the cut made it
// discard, releases the parked inside call, before the cut has closed cut.
// The calls from outside must still return the cut's error. The inside call
// may return nil (released: "every other handler is idle") or the
// outcome; the doc promises the outcome only to calls not from a handler,
// so nil is logged, not failed.
func TestAnInsideShutdownReleasedDuringTheCutLeavesTheCutAsTheOutcome(t *testing.T) {
	nilInside := 0
	for run := range 20 {
		var b Broker
		stuck := make(chan struct{})
		b.Handle(func(ctx context.Context, j crJob) error {
			if j.N == 0 {
				close(stuck)
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}, Name[crJob]("stuck"), Buffer[crJob](8))
		inside := make(chan error, 1)
		crGate(t, &b, func() {
			// Until the inside call has returned, then until the drain has
			// found both handlers quiescent and reached seal.
			select {
			case err := <-inside:
				inside <- err
			case <-time.After(10 * time.Second):
				return
			}
			crInStack(crSealFrame, 10*time.Second)
		})
		parked := make(chan struct{})
		b.Handle(func(ctx context.Context, v crIn) error {
			close(parked)
			inside <- b.Shutdown(context.Background())
			return nil
		}, Name[crIn]("inside"), Buffer[crIn](8))
		for i := range 4 {
			b.Publish(crJob{i})
		}
		<-stuck
		b.Publish(crIn{})
		<-parked
		bg := make(chan error, 1)
		go func() { bg <- b.Shutdown(context.Background()) }()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		err := crWithin(t, "Shutdown", func() error { return b.Shutdown(ctx) })
		cancel()
		if err != context.DeadlineExceeded {
			t.Errorf("run %d: the cutting Shutdown = %v, want %v", run, err, context.DeadlineExceeded)
		}
		if err := crWithin(t, "Shutdown(Background)", func() error { return <-bg }); err != context.DeadlineExceeded {
			t.Errorf("run %d: the concurrent Shutdown(Background) = %v, want the drain's %v", run, err, context.DeadlineExceeded)
		}
		in := crWithin(t, "the inside Shutdown", func() error { return <-inside })
		switch in {
		case nil:
			nilInside++
		case context.DeadlineExceeded:
		default:
			t.Errorf("run %d: the inside Shutdown = %v", run, in)
		}
		if st := crStats(t, &b, "stuck"); st.Lost.Discarded != 4 {
			t.Errorf("run %d: Discarded %d, want 4", run, st.Lost.Discarded)
		}
	}
	t.Logf("the inside Shutdown returned nil in %d of 20 runs, although the drain was cut and the handler it waited for discarded 4 values", nilInside)
}

// A pipeline of three handlers, under synctest, whose calls take whole
// milliseconds (honouring their context) and a Shutdown whose deadline is a
// whole number of milliseconds too, so that it often ends at the very
// instant the last call does; a second Shutdown with context.Background,
// and a later one with an ended context. Every call returns the same
// outcome; nil exactly when no handler was told to discard (and then
// everything was handled, nothing lost, no call saw its context
// cancelled); and either way the counts add up.
func TestShutdownOutcomeMatchesWhatHappenedToTheValues(t *testing.T) {
	var outcomes [3]atomic.Int64 // nil, cut with discards, cut with nothing discarded
	for run := range 300 {
		synctest.Test(t, func(t *testing.T) {
			var b Broker
			var sawCancel atomic.Bool
			work := func(ctx context.Context, n int) error {
				if d := time.Duration((n+run)%3) * time.Millisecond; d > 0 {
					tm := time.NewTimer(d)
					select {
					case <-tm.C:
					case <-ctx.Done():
						tm.Stop()
					}
				}
				if err := ctx.Err(); err != nil {
					sawCancel.Store(true)
					return err
				}
				return nil
			}
			b.Handle(func(ctx context.Context, v crJob) error {
				if err := work(ctx, v.N); err != nil {
					return err
				}
				b.Publish(crMid(v))
				return nil
			}, Name[crJob]("a"), Buffer[crJob](64))
			b.Handle(func(ctx context.Context, v crMid) error {
				if err := work(ctx, v.N+1); err != nil {
					return err
				}
				b.Publish(crLast(v))
				return nil
			}, Name[crMid]("b"), Buffer[crMid](64))
			b.Handle(func(ctx context.Context, v crLast) error { return work(ctx, v.N+2) },
				Name[crLast]("c"), Buffer[crLast](64))
			const n = 6
			for i := range n {
				b.Publish(crJob{i})
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(run%12)*time.Millisecond)
			defer cancel()
			var errBg error
			var wg sync.WaitGroup
			wg.Go(func() { errBg = b.Shutdown(context.Background()) })
			errCut := b.Shutdown(ctx)
			wg.Wait()
			ended, cancel2 := context.WithCancel(context.Background())
			cancel2()
			errLater := b.Shutdown(ended)

			if errCut != errBg || errCut != errLater {
				t.Fatalf("run %d: outcomes differ: deadline %v, Background %v, later %v", run, errCut, errBg, errLater)
			}
			if errCut != nil && errCut != context.DeadlineExceeded {
				t.Fatalf("run %d: Shutdown = %v", run, errCut)
			}
			if g := b.Goroutines(); g != 0 {
				t.Errorf("run %d: %d goroutines after Shutdown(Background)", run, g)
			}
			discarding, of := crDiscardingHandlers(&b)
			a, bb, c := crStats(t, &b, "a"), crStats(t, &b, "b"), crStats(t, &b, "c")
			show := func() string {
				return fmt.Sprintf("a %+v %+v, b %+v %+v, c %+v %+v", *a.Handler, a.Lost, *bb.Handler, bb.Lost, *c.Handler, c.Lost)
			}
			for _, st := range []SubscriptionStats{a, bb, c} {
				if st.Lost.Full != 0 || st.Lost.Errored != 0 ||
					st.Handler.Accepted != st.Handler.Handled+st.Lost.Discarded {
					t.Errorf("run %d: %s: accepted is not handled plus discarded: %s", run, st.Name, show())
				}
			}
			if a.Handler.Accepted != n || bb.Handler.Accepted+bb.Lost.Closed != a.Handler.Handled ||
				c.Handler.Accepted+c.Lost.Closed != bb.Handler.Handled {
				t.Errorf("run %d: what a handler published is not what the next accepted or counted Closed: %s", run, show())
			}
			lost := a.Lost.Total() + bb.Lost.Total() + c.Lost.Total()
			switch {
			case errCut == nil:
				outcomes[0].Add(1)
				if discarding != 0 || sawCancel.Load() || lost != 0 || c.Handler.Handled != n {
					t.Errorf("run %d: Shutdown = nil, but %d of %d handlers discarding, a call saw its context cancelled: %v, %d lost, %d of %d handled at the end: %s",
						run, discarding, of, sawCancel.Load(), lost, c.Handler.Handled, n, show())
				}
			case discarding != of:
				t.Errorf("run %d: Shutdown = %v, but only %d of %d handlers were told to discard", run, errCut, discarding, of)
			case lost != 0:
				outcomes[1].Add(1)
			default:
				outcomes[2].Add(1)
			}
		})
	}
	t.Logf("outcomes: nil %d, cut with losses %d, cut with nothing lost (ctx ended as the drain did) %d",
		outcomes[0].Load(), outcomes[1].Load(), outcomes[2].Load())
}

// Two Shutdowns at once, one with a context ended before the call and one
// with context.Background, on a broker whose handlers are idle: both, and a
// later call, return the same outcome, nil exactly when no handler was told
// to discard. Real goroutines, many runs, for -race on d.err and cutErr.
func TestAnEndedAndALiveShutdownAgree(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	var nils int
	for run := range 300 {
		var b Broker
		for range 3 {
			b.Handle(func(context.Context, crJob) error { return nil }, Buffer[crJob](4))
		}
		b.Publish(crJob{run})
		if err := b.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		var errs [2]error
		var wg sync.WaitGroup
		wg.Go(func() { <-start; errs[0] = b.Shutdown(ended) })
		wg.Go(func() { <-start; errs[1] = b.Shutdown(context.Background()) })
		close(start)
		crWithin(t, "the Shutdowns", func() struct{} { wg.Wait(); return struct{}{} })
		later := b.Shutdown(context.Background())
		if errs[0] != errs[1] || errs[0] != later {
			t.Fatalf("run %d: ended ctx %v, Background %v, later %v", run, errs[0], errs[1], later)
		}
		discarding, of := crDiscardingHandlers(&b)
		switch errs[0] {
		case nil:
			nils++
			if discarding != 0 {
				t.Errorf("run %d: Shutdown = nil, but %d of %d handlers were told to discard", run, discarding, of)
			}
		case context.Canceled:
			if discarding != of {
				t.Errorf("run %d: Shutdown = %v, but only %d of %d handlers were told to discard", run, errs[0], discarding, of)
			}
		default:
			t.Fatalf("run %d: Shutdown = %v", run, errs[0])
		}
	}
	t.Logf("nil in %d of 300 runs", nils)
}

// A Shutdown from inside a handler's function races an outside Shutdown
// whose deadline ends while another handler works (honouring its
// context), with real time and random pacing; a third Shutdown with
// context.Background. The outside calls agree, nil exactly when no handler
// was told to discard; the inside call returns nil or that outcome; nothing
// hangs and no goroutine is left.
func TestAnInsideShutdownRacingAnOutsideCutAgrees(t *testing.T) {
	var insideNilOnCut int
	for run := range 200 {
		var b Broker
		b.Handle(func(ctx context.Context, j crJob) error {
			tm := time.NewTimer(time.Duration(rand.IntN(400)) * time.Microsecond)
			defer tm.Stop()
			select {
			case <-tm.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, Name[crJob]("busy"), Buffer[crJob](16))
		inside := make(chan error, 1)
		b.Handle(func(ctx context.Context, v crIn) error {
			inside <- b.Shutdown(context.Background())
			return nil
		}, Name[crIn]("inside"), Buffer[crIn](1),
			OnLoss(func(Loss[crIn]) { inside <- errCrNotCalled })) // discarded by a cut before its call
		for i := range 8 {
			b.Publish(crJob{i})
		}
		b.Publish(crIn{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(2000))*time.Microsecond)
		bg := make(chan error, 1)
		go func() { bg <- b.Shutdown(context.Background()) }()
		errCut := crWithin(t, "Shutdown", func() error { return b.Shutdown(ctx) })
		cancel()
		errBg := crWithin(t, "Shutdown(Background)", func() error { return <-bg })
		in := crWithin(t, "the inside Shutdown", func() error { return <-inside })
		if errCut != errBg {
			t.Fatalf("run %d: deadline %v, Background %v", run, errCut, errBg)
		}
		discarding, of := crDiscardingHandlers(&b)
		switch {
		case errCut == nil && discarding != 0:
			t.Errorf("run %d: Shutdown = nil, but %d of %d handlers were told to discard", run, discarding, of)
		case errCut != nil && discarding != of:
			t.Errorf("run %d: Shutdown = %v, but %d of %d handlers were told to discard", run, errCut, discarding, of)
		case errCut != nil && !errors.Is(errCut, context.DeadlineExceeded):
			t.Errorf("run %d: Shutdown = %v", run, errCut)
		}
		if in == errCrNotCalled {
			in = errCut // not called: nothing to compare
		}
		if in != nil && in != errCut {
			t.Errorf("run %d: the inside Shutdown = %v, the drain's outcome %v", run, in, errCut)
		}
		if in == nil && errCut != nil {
			insideNilOnCut++
		}
		if g := b.Goroutines(); g != 0 {
			t.Errorf("run %d: %d goroutines after Shutdown(Background)", run, g)
		}
		st := crStats(t, &b, "busy")
		if st.Handler.Accepted != 8 || st.Handler.Handled+st.Lost.Discarded != 8 || st.Lost.Errored != 0 {
			t.Errorf("run %d: busy: %+v %+v", run, *st.Handler, st.Lost)
		}
		if errCut == nil && st.Handler.Handled != 8 {
			t.Errorf("run %d: Shutdown = nil, but busy handled %d of 8", run, st.Handler.Handled)
		}
	}
	t.Logf("the inside Shutdown returned nil while the drain was cut in %d of 200 runs", insideNilOnCut)
}
