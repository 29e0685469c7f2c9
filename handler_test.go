package topic_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

// hJob is the value the handler tests publish: P is its publisher, N its
// number.
type hJob struct{ P, N int }

// hRaw is published and converted into an hJob by a From source.
type hRaw struct{ P, N int }

// hOther and hNew are other topics.
type (
	hOther struct{ N int }
	hNew   struct{ N int }
	hEcho  struct{ N int }
)

var errHandler = errors.New("handler failed")

// hPanicky panics: its name must appear in the stack of the *PanicError.
func hPanicky(j hJob) {
	panic(fmt.Sprintf("hPanicky: job %d", j.N))
}

// hLosses collects what an OnLoss function receives, from any goroutine.
type hLosses[T any] struct {
	mu sync.Mutex
	ls []topic.Loss[T]
}

func (l *hLosses[T]) hook() topic.Option[T] { return topic.OnLoss(l.add) }

func (l *hLosses[T]) add(x topic.Loss[T]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ls = append(l.ls, x)
}

func (l *hLosses[T]) all() []topic.Loss[T] {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ls)
}

func (l *hLosses[T]) count(causes ...topic.Cause) uint64 {
	var n uint64
	for _, x := range l.all() {
		if slices.Contains(causes, x.Cause) {
			n++
		}
	}
	return n
}

// hWantLosses checks the causes, values and errors of the losses, in order.
func hWantLosses(t *testing.T, l *hLosses[hJob], want ...topic.Loss[hJob]) {
	t.Helper()
	got := l.all()
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		g, w := got[i], want[i]
		same = g.Cause == w.Cause && g.Value == w.Value &&
			(g.Err == nil) == (w.Err == nil) && (w.Err == nil || errors.Is(g.Err, w.Err))
	}
	if !same {
		t.Errorf("losses:\n got %v\nwant %v", hShowLosses(got), hShowLosses(want))
	}
}

func hShowLosses(ls []topic.Loss[hJob]) string {
	var s []string
	for _, l := range ls {
		s = append(s, fmt.Sprintf("{%v %v err=%v}", l.Cause, l.Value, l.Err))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// hStats returns the snapshot of the subscription named name.
func hStats(t *testing.T, b *topic.Broker, name string) topic.SubscriptionStats {
	t.Helper()
	for _, st := range b.Subscriptions() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no subscription named %q in the snapshot", name)
	return topic.SubscriptionStats{}
}

// hListed reports whether a subscription named name is in the snapshot.
func hListed(b *topic.Broker, name string) bool {
	for _, st := range b.Subscriptions() {
		if st.Name == name {
			return true
		}
	}
	return false
}

// hDone reports whether ch is closed, or holds a value, right now.
func hDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestHandlerKeepsOrderUnderRetries(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		var b topic.Broker
		type call struct{ N, Attempt int }
		var calls []call
		attempts := make(map[int]int)
		stop := b.Handle(func(_ context.Context, j hJob) error {
			attempts[j.N]++
			calls = append(calls, call{j.N, attempts[j.N]})
			if attempts[j.N] <= j.N%4 { // value i fails i%4 times
				return errHandler
			}
			return nil
		}, topic.Buffer[hJob](n), topic.Retry[hJob](topic.RetryPolicy{
			Attempts: 4, Base: time.Millisecond, Max: 3 * time.Millisecond, Jitter: 0.5,
		}))
		for i := range n {
			b.Publish(hJob{N: i})
		}
		stop()

		var want []call
		for i := range n {
			for a := 1; a <= i%4+1; a++ {
				want = append(want, call{i, a})
			}
		}
		if !slices.Equal(calls, want) {
			t.Errorf("calls (value, attempt):\n got %v\nwant %v", calls, want)
		}
	})
}

func TestRetryBacksOffExponentiallyUpToMax(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		dead, _ := b.Subscribe(topic.Buffer[topic.DeadLetter[hJob]](1))
		var at []time.Duration
		start := time.Now()
		stop := b.Handle(func(context.Context, hJob) error {
			at = append(at, time.Since(start))
			return errHandler
		}, topic.Retry[hJob](topic.RetryPolicy{Attempts: 6, Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}))
		b.Publish(hJob{N: 1})
		stop()

		ms := time.Millisecond
		// Waits of 10, 20, 40, then 50 and 50: the maximum.
		want := []time.Duration{0, 10 * ms, 30 * ms, 70 * ms, 120 * ms, 170 * ms}
		if !slices.Equal(at, want) {
			t.Errorf("attempts at %v, want %v", at, want)
		}
		if d := takeAll(dead); len(d) != 1 || d[0].Attempts != 6 {
			t.Errorf("dead letters %v, want one after 6 attempts", d)
		}
	})
}

func TestRetryJitterShortensEachWaitByUpToItsFraction(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const n = 50
		var b topic.Broker
		last := make(map[int]time.Time)
		tries := make(map[int]int)
		var gaps [3][]time.Duration // by retry
		stop := b.Handle(func(_ context.Context, j hJob) error {
			now := time.Now()
			if k := tries[j.N]; k > 0 {
				gaps[k-1] = append(gaps[k-1], now.Sub(last[j.N]))
			}
			tries[j.N]++
			last[j.N] = now
			return errHandler
		}, topic.Buffer[hJob](n), topic.Retry[hJob](topic.RetryPolicy{
			Attempts: 4, Base: 40 * time.Millisecond, Jitter: 0.5,
		}))
		for i := range n {
			b.Publish(hJob{N: i})
		}
		stop()

		for k, g := range gaps {
			d := 40 * time.Millisecond << k // no Max: the waits double
			if len(g) != n {
				t.Fatalf("retry %d made %d times, want %d", k+1, len(g), n)
			}
			lo, hi := slices.Min(g), slices.Max(g)
			if lo < d/2 || hi > d {
				t.Errorf("retry %d waited from %v to %v, want within [%v, %v]", k+1, lo, hi, d/2, d)
			}
			if lo == hi {
				t.Errorf("retry %d always waited %v: no jitter", k+1, lo)
			}
		}
	})
}

// hTally counts the values a handler function has finished with (handled,
// or failed for the last time) and signals when a number is reached.
type hTally struct {
	mu     sync.Mutex
	finals int
	target int
	reach  chan struct{}
}

func (y *hTally) final() {
	y.mu.Lock()
	defer y.mu.Unlock()
	y.finals++
	y.checkLocked()
}

// until returns a channel closed once n values are final.
func (y *hTally) until(n int) <-chan struct{} {
	y.mu.Lock()
	defer y.mu.Unlock()
	reach := make(chan struct{})
	y.target, y.reach = n, reach
	y.checkLocked()
	return reach
}

func (y *hTally) checkLocked() {
	if y.reach != nil && y.finals >= y.target {
		close(y.reach)
		y.reach = nil
	}
}

type hAccountingCase struct {
	name    string
	retry   bool
	policy  topic.Policy
	discard bool
}

// TestHandlerAccountsForEveryValueExactly publishes rounds of values from
// concurrent publishers, some through a From source that panics now and
// then, to a handler with a small queue. Some values fail a few times, some
// always; some panic once, some always. Every value published must be
// accepted by the handler or lost by its channel (Full, Evicted, Failed);
// every value accepted must be handled, dead-lettered, or lost by the
// handler (Errored, Discarded); every dead letter counted must be received.
func TestHandlerAccountsForEveryValueExactly(t *testing.T) {
	t.Parallel()
	for _, c := range []hAccountingCase{
		{name: "at-most-once"},
		{name: "at-least-once", retry: true},
		{name: "at-most-once drop-oldest discard-on-stop", policy: topic.DropOldest, discard: true},
		{name: "at-least-once drop-oldest discard-on-stop", retry: true, policy: topic.DropOldest, discard: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { hAccount(t, c) })
		})
	}
}

func hAccount(t *testing.T, c hAccountingCase) {
	const (
		publishers = 4
		perRound   = 10 // values per publisher per round
		buffer     = 16
		attempts   = 4
	)
	rounds := iterations(25)
	capacity := (rounds+1)*publishers*perRound + buffer + 8

	var b topic.Broker
	var losses hLosses[hJob]
	var tally hTally
	dead, cancelDead := b.Subscribe(topic.Buffer[topic.DeadLetter[hJob]](capacity), topic.Name[topic.DeadLetter[hJob]]("dead"))
	letters, cancelLetters := b.Subscribe(topic.Buffer[topic.DeadLettered](capacity), topic.Name[topic.DeadLettered]("letters"))
	defer cancelDead()
	defer cancelLetters()

	// Written by the handler's goroutine only, read after it is idle or
	// has ended.
	calls := make(map[hJob]int)
	var handled, totalCalls int
	fail := func(j hJob, last bool, err error) error {
		if last {
			tally.final()
		}
		return err
	}
	f := func(ctx context.Context, j hJob) error {
		if j.N < 0 { // the value in flight when a discarding stop comes
			<-ctx.Done()
			return ctx.Err()
		}
		calls[j]++
		totalCalls++
		a := calls[j]
		last := !c.retry || a == attempts
		switch j.N % 10 {
		case 6: // fails twice
			if a <= 2 {
				return fail(j, last, fmt.Errorf("job %v attempt %d: %w", j, a, errHandler))
			}
		case 7: // always fails
			return fail(j, last, errHandler)
		case 8: // always panics
			fail(j, last, nil)
			hPanicky(j)
		case 9: // panics once
			if a == 1 {
				fail(j, last, nil)
				hPanicky(j)
			}
		}
		handled++
		tally.final()
		return nil
	}
	opts := []topic.Option[hJob]{
		topic.Name[hJob]("accounting"),
		topic.Buffer[hJob](buffer),
		topic.Overflow[hJob](c.policy),
		losses.hook(),
		topic.From(func(r hRaw) (hJob, bool) {
			if r.N%20 == 5 {
				panic("bad raw value")
			}
			return hJob(r), true
		}),
	}
	if c.retry {
		opts = append(opts, topic.Retry[hJob](topic.RetryPolicy{
			Attempts: attempts, Base: time.Millisecond, Max: 4 * time.Millisecond, Jitter: 0.5,
		}))
	}
	if c.discard {
		opts = append(opts, topic.DiscardOnStop[hJob]())
	}
	stop := b.Handle(f, opts...)

	publisherLosses := func() int { return int(losses.count(topic.Full, topic.Evicted, topic.Failed)) }
	published := 0
	publishRound := func(r int) {
		var wg sync.WaitGroup
		for p := range publishers {
			wg.Go(func() {
				for i := range perRound {
					n := r*perRound + i
					if n%2 == 0 {
						b.Publish(hJob{P: p, N: n})
					} else {
						b.Publish(hRaw{P: p, N: n})
					}
				}
			})
		}
		wg.Wait()
		published += publishers * perRound
	}
	for r := range rounds {
		publishRound(r)
		<-tally.until(published - publisherLosses())
	}
	synctest.Wait() // the handler is idle, its counts published

	st := hStats(t, &b, "accounting")
	h := st.Handler
	if h == nil {
		t.Fatal("handler subscription has no HandlerStats")
	}
	t.Logf("idle: published %d = accepted %d + full %d + evicted %d + failed %d; "+
		"accepted = handled %d + dead-lettered %d + errored %d + discarded %d; retried %d; dead letters received %d",
		published, h.Accepted, st.Lost.Full, st.Lost.Evicted, st.Lost.Failed,
		h.Handled, h.DeadLettered, st.Lost.Errored, st.Lost.Discarded, h.Retried, len(dead))
	if got := h.Accepted + st.Lost.Full + st.Lost.Evicted + st.Lost.Failed; got != uint64(published) {
		t.Errorf("accepted + full + evicted + failed = %d, want published %d", got, published)
	}
	if got := h.Handled + h.DeadLettered + st.Lost.Errored + st.Lost.Discarded; got != h.Accepted {
		t.Errorf("handled + dead-lettered + errored + discarded = %d, want accepted %d", got, h.Accepted)
	}
	if h.Handled != uint64(handled) {
		t.Errorf("Handled = %d, want the %d successful calls", h.Handled, handled)
	}
	if got := uint64(totalCalls) - h.Accepted; h.Retried != got {
		t.Errorf("Retried = %d, want calls - accepted = %d", h.Retried, got)
	}
	if h.DeadLettered != uint64(len(dead)) || h.DeadLettered != uint64(len(letters)) {
		t.Errorf("DeadLettered = %d, want the dead letters received: %d of DeadLetter[hJob], %d of DeadLettered",
			h.DeadLettered, len(dead), len(letters))
	}
	for _, x := range []struct {
		name      string
		got, want uint64
	}{
		{"Full", st.Lost.Full, losses.count(topic.Full)},
		{"Evicted", st.Lost.Evicted, losses.count(topic.Evicted)},
		{"Failed", st.Lost.Failed, losses.count(topic.Failed)},
		{"Errored", st.Lost.Errored, losses.count(topic.Errored)},
		{"Discarded", st.Lost.Discarded, losses.count(topic.Discarded)},
	} {
		if x.got != x.want {
			t.Errorf("Lost.%s = %d, want %d as reported to OnLoss", x.name, x.got, x.want)
		}
	}
	if h.AtLeastOnce != c.retry {
		t.Errorf("AtLeastOnce = %v, want %v", h.AtLeastOnce, c.retry)
	}
	if st.Queued != 0 || st.Lost.Discarded != 0 {
		t.Errorf("idle handler: Queued %d, Discarded %d, want 0 and 0", st.Queued, st.Lost.Discarded)
	}
	if st.Lost.Failed == 0 || h.Handled == 0 || st.Lost.Errored+h.DeadLettered == 0 {
		t.Errorf("the test exercised too little: %+v %+v", st.Lost, *h)
	}
	if !c.retry && (h.DeadLettered != 0 || h.Retried != 0) {
		t.Errorf("at-most-once handler dead-lettered %d and retried %d", h.DeadLettered, h.Retried)
	}
	if c.policy == topic.DropNewest && st.Lost.Evicted != 0 {
		t.Errorf("drop-newest handler evicted %d", st.Lost.Evicted)
	}

	// A last round, then stop: a draining stop handles what is queued,
	// retries included; a discarding one discards it.
	if c.discard {
		b.Publish(hJob{N: -1}) // waits for its context
		synctest.Wait()
		for i := range buffer + 4 {
			b.Publish(hJob{N: 1000 + i})
		}
		published += 1 + buffer + 4
	} else {
		publishRound(rounds)
	}
	stop()

	// After stop, count from what the function, OnLoss and the dead-letter
	// subscriptions saw.
	accepted := uint64(published - publisherLosses())
	deadLettered := uint64(len(dead))
	errored, discarded := losses.count(topic.Errored), losses.count(topic.Discarded)
	t.Logf("stopped: published %d = accepted %d + full %d + evicted %d + failed %d; "+
		"accepted = handled %d + dead-lettered %d + errored %d + discarded %d; dead letters received %d, %d",
		published, accepted, losses.count(topic.Full), losses.count(topic.Evicted), losses.count(topic.Failed),
		handled, deadLettered, errored, discarded, len(dead), len(letters))
	if got := uint64(handled) + deadLettered + errored + discarded; got != accepted {
		t.Errorf("after stop: handled + dead-lettered + errored + discarded = %d, want accepted %d", got, accepted)
	}
	if len(letters) != len(dead) {
		t.Errorf("after stop: %d DeadLettered received, want %d as of DeadLetter[hJob]", len(letters), len(dead))
	}
	if c.discard {
		// buffer values queued, and the one in flight, whose call fails
		// as the stop cancels its context: all discarded.
		wantDiscarded := uint64(buffer + 1)
		if discarded != wantDiscarded {
			t.Errorf("discarding stop: %d discarded, want %d", discarded, wantDiscarded)
		}
	} else if discarded != 0 {
		t.Errorf("draining stop: %d discarded, want 0", discarded)
	}
	for _, l := range takeAll(dead) {
		if l.Attempts != attempts || l.Handler != "accounting" || l.Value.N%10 < 7 {
			t.Errorf("dead letter %+v: want %d attempts by \"accounting\" of a job that always fails", l, attempts)
		}
		var pe *topic.PanicError
		if panicked := errors.As(l.Err, &pe); panicked != (l.Value.N%10 == 8) {
			t.Errorf("dead letter of %v has error %v", l.Value, l.Err)
		}
	}
	if hListed(&b, "accounting") {
		t.Error("stopped handler still listed by Subscriptions")
	}
}

func TestHandlerPanicIsIsolated(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const n = 10
		var b topic.Broker
		var losses hLosses[hJob]
		stopPanicky := b.Handle(func(_ context.Context, j hJob) error {
			hPanicky(j)
			return nil
		}, topic.Buffer[hJob](n), losses.hook())
		dead, _ := b.Subscribe(topic.Buffer[topic.DeadLetter[hJob]](2 * n))
		stopRetrying := b.Handle(func(_ context.Context, j hJob) error {
			hPanicky(j)
			return nil
		}, topic.Buffer[hJob](n), topic.Retry[hJob](topic.RetryPolicy{Attempts: 2}))
		stopErrPanic := b.Handle(func(_ context.Context, j hJob) error {
			panic(errHandler) // a panic with an error unwraps to it
		}, topic.Buffer[hJob](n), topic.Retry[hJob](topic.RetryPolicy{Attempts: 1}))
		others := 0
		stopOther := b.Handle(func(_ context.Context, j hJob) error {
			others++
			return nil
		}, topic.Buffer[hJob](n))
		ch, cancel := b.Subscribe(topic.Buffer[hJob](n))
		defer cancel()

		for i := range n {
			b.Publish(hJob{N: i})
		}
		stopPanicky()
		stopRetrying()
		stopErrPanic()
		stopOther()

		if got := len(takeAll(ch)); got != n {
			t.Errorf("subscription received %d values, want %d", got, n)
		}
		if others != n {
			t.Errorf("other handler handled %d values, want %d", others, n)
		}
		ls := losses.all()
		if len(ls) != n {
			t.Fatalf("panicking handler lost %d values, want %d", len(ls), n)
		}
		check := func(what string, err error) {
			t.Helper()
			var pe *topic.PanicError
			if !errors.As(err, &pe) {
				t.Fatalf("%s: error %v (%T), want a *topic.PanicError", what, err, err)
			}
			if !strings.Contains(fmt.Sprint(pe.Value), "hPanicky: job") {
				t.Errorf("%s: PanicError.Value = %v, want the panic's value", what, pe.Value)
			}
			if !strings.Contains(pe.Error(), "panicked") {
				t.Errorf("%s: Error() = %q", what, pe.Error())
			}
			if !strings.Contains(string(pe.Stack), "topic_test.hPanicky") {
				t.Errorf("%s: stack does not name the panicking function:\n%s", what, pe.Stack)
			}
		}
		for i, l := range ls {
			if l.Cause != topic.Errored || l.Value.N != i {
				t.Errorf("loss %d: %v of %v, want Errored of job %d", i, l.Cause, l.Value, i)
			}
			check("at-most-once loss", l.Err)
		}
		ds := takeAll(dead)
		if len(ds) != 2*n {
			t.Fatalf("%d dead letters, want %d", len(ds), 2*n)
		}
		for _, d := range ds {
			if d.Attempts == 2 {
				check("dead letter", d.Err)
			} else if !errors.Is(d.Err, errHandler) {
				t.Errorf("dead letter of a panic with an error: %v does not unwrap to it", d.Err)
			}
		}
	})
}

func TestAttemptTimeoutCancelsEachAttemptThenDeadLetters(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		dead, _ := b.Subscribe(topic.Buffer[topic.DeadLetter[hJob]](1))
		ms := time.Millisecond
		start := time.Now()
		var at []time.Duration
		var errs []error
		stop := b.Handle(func(ctx context.Context, _ hJob) error {
			now := time.Since(start)
			at = append(at, now)
			if dl, ok := ctx.Deadline(); !ok || dl.Sub(start) != now+50*ms {
				t.Errorf("attempt at %v: deadline %v, %v, want 50ms later", now, dl.Sub(start), ok)
			}
			<-ctx.Done()
			errs = append(errs, ctx.Err())
			return ctx.Err()
		}, topic.AttemptTimeout[hJob](50*ms), topic.Retry[hJob](topic.RetryPolicy{Attempts: 3, Base: 10 * ms}))
		b.Publish(hJob{N: 1})
		stop()

		if want := []time.Duration{0, 60 * ms, 130 * ms}; !slices.Equal(at, want) {
			t.Errorf("attempts at %v, want %v", at, want)
		}
		for _, err := range errs {
			if err != context.DeadlineExceeded {
				t.Errorf("attempt saw %v, want %v", err, context.DeadlineExceeded)
			}
		}
		ds := takeAll(dead)
		if len(ds) != 1 || ds[0].Attempts != 3 || !errors.Is(ds[0].Err, context.DeadlineExceeded) {
			t.Errorf("dead letters %+v, want one after 3 attempts that timed out", ds)
		}
		if got := time.Since(start); got != 180*ms {
			t.Errorf("stop returned after %v, want 180ms", got)
		}
	})
}

func TestHandlerAttemptTimeoutLetsTheResultDecide(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		var losses hLosses[hJob]
		calls := 0
		stop := b.Handle(func(ctx context.Context, j hJob) error {
			calls++
			<-ctx.Done()
			if j.N == 0 {
				return nil // finished in time after all
			}
			return ctx.Err()
		}, topic.AttemptTimeout[hJob](time.Second), losses.hook())
		b.Publish(hJob{N: 0})
		b.Publish(hJob{N: 1})
		stop()
		if calls != 2 {
			t.Errorf("%d calls, want 2", calls)
		}
		hWantLosses(t, &losses, topic.Loss[hJob]{Cause: topic.Errored, Value: hJob{N: 1}, Err: context.DeadlineExceeded})
	})
}

func TestDrainingStopLeavesTheHandlerContextLive(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		gate := make(chan struct{})
		var errs []error
		stop := b.Handle(func(ctx context.Context, j hJob) error {
			if j.N == 0 {
				<-gate
			}
			errs = append(errs, ctx.Err())
			return nil
		})
		for i := range 4 {
			b.Publish(hJob{N: i})
		}
		synctest.Wait() // in the call of job 0
		stopped := make(chan struct{})
		go func() {
			stop()
			close(stopped)
		}()
		synctest.Wait()
		if hDone(stopped) {
			t.Fatal("stop returned while the call in flight had not")
		}
		close(gate)
		<-stopped
		if want := []error{nil, nil, nil, nil}; !slices.Equal(errs, want) {
			t.Errorf("contexts' errors %v, want %v: a draining stop must not cancel", errs, want)
		}
	})
}

func TestDiscardingStopCancelsTheHandlerContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		var losses hLosses[hJob]
		var seen error
		stop := b.Handle(func(ctx context.Context, j hJob) error {
			<-ctx.Done()
			seen = context.Cause(ctx)
			return nil
		}, topic.DiscardOnStop[hJob](), losses.hook())
		for i := range 4 {
			b.Publish(hJob{N: i})
		}
		synctest.Wait() // in the call of job 0
		stop()
		if seen != context.Canceled {
			t.Errorf("call in flight saw %v, want %v", seen, context.Canceled)
		}
		hWantLosses(t, &losses,
			topic.Loss[hJob]{Cause: topic.Discarded, Value: hJob{N: 1}},
			topic.Loss[hJob]{Cause: topic.Discarded, Value: hJob{N: 2}},
			topic.Loss[hJob]{Cause: topic.Discarded, Value: hJob{N: 3}})
	})
}

func TestStopFromInsideTheHandlerReturnsAtOnce(t *testing.T) {
	for _, discard := range []bool{false, true} {
		t.Run(fmt.Sprintf("discard=%v", discard), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				var losses hLosses[hJob]
				opts := []topic.Option[hJob]{losses.hook(), topic.Buffer[hJob](8)}
				if discard {
					opts = append(opts, topic.DiscardOnStop[hJob]())
				}
				start := b.Goroutines()
				queued, stoppedInside, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
				var got []int
				var ctxErr error
				var stop func()
				stop = b.Handle(func(ctx context.Context, j hJob) error {
					got = append(got, j.N)
					if j.N == 0 {
						<-queued
						stop() // must not wait for itself
						stop() // nor the second time
						ctxErr = ctx.Err()
						close(stoppedInside)
						<-release // the handler must not end before f returns
					}
					return nil
				}, opts...)
				b.Publish(hJob{N: 0})
				synctest.Wait()
				for i := 1; i <= 3; i++ {
					b.Publish(hJob{N: i})
				}
				close(queued)
				<-stoppedInside
				b.Publish(hJob{N: 99}) // after stop: not accepted

				outside := make(chan struct{})
				go func() {
					stop()
					close(outside)
				}()
				synctest.Wait()
				if hDone(outside) {
					t.Fatal("stop returned while the handler's function was still running")
				}
				close(release)
				<-outside
				synctest.Wait()
				if n := b.Goroutines(); n != start {
					t.Errorf("%d handler goroutines after stop, want %d", n, start)
				}
				if discard {
					if !slices.Equal(got, []int{0}) || ctxErr != context.Canceled {
						t.Errorf("handled %v, context %v; want [0] and cancelled", got, ctxErr)
					}
					hWantLosses(t, &losses,
						topic.Loss[hJob]{Cause: topic.Discarded, Value: hJob{N: 1}},
						topic.Loss[hJob]{Cause: topic.Discarded, Value: hJob{N: 2}},
						topic.Loss[hJob]{Cause: topic.Discarded, Value: hJob{N: 3}})
				} else {
					if !slices.Equal(got, []int{0, 1, 2, 3}) || ctxErr != nil {
						t.Errorf("handled %v, context %v; want [0 1 2 3] and live", got, ctxErr)
					}
					hWantLosses(t, &losses)
				}
			})
		})
	}
}

func TestStopDuringARetryBackOff(t *testing.T) {
	t.Parallel()
	for _, discard := range []bool{false, true} {
		t.Run(fmt.Sprintf("discard=%v", discard), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				var losses hLosses[hJob]
				opts := []topic.Option[hJob]{
					losses.hook(),
					topic.Retry[hJob](topic.RetryPolicy{Attempts: 3, Base: 100 * time.Millisecond}),
				}
				if discard {
					opts = append(opts, topic.DiscardOnStop[hJob]())
				}
				type call struct {
					N  int
					At time.Duration
				}
				var calls []call
				start := time.Now()
				tries := 0
				stop := b.Handle(func(_ context.Context, j hJob) error {
					calls = append(calls, call{j.N, time.Since(start)})
					if j.N == 0 {
						if tries++; tries == 1 {
							return errHandler
						}
					}
					return nil
				}, opts...)
				for i := range 3 {
					b.Publish(hJob{N: i})
				}
				synctest.Wait() // job 0 failed; its retry waits 100ms
				stop()
				stoppedAt := time.Since(start)

				ms := time.Millisecond
				if discard {
					if want := []call{{0, 0}}; !slices.Equal(calls, want) {
						t.Errorf("calls %v, want %v", calls, want)
					}
					if stoppedAt != 0 {
						t.Errorf("discarding stop returned after %v, want at once", stoppedAt)
					}
					hWantLosses(t, &losses,
						topic.Loss[hJob]{Cause: topic.Discarded, Value: hJob{N: 0}, Err: errHandler},
						topic.Loss[hJob]{Cause: topic.Discarded, Value: hJob{N: 1}},
						topic.Loss[hJob]{Cause: topic.Discarded, Value: hJob{N: 2}})
				} else {
					if want := []call{{0, 0}, {0, 100 * ms}, {1, 100 * ms}, {2, 100 * ms}}; !slices.Equal(calls, want) {
						t.Errorf("calls %v, want %v", calls, want)
					}
					if stoppedAt != 100*ms {
						t.Errorf("draining stop returned after %v, want 100ms", stoppedAt)
					}
					hWantLosses(t, &losses)
				}
			})
		})
	}
}

// A discarding stop, or a Shutdown past its deadline, cancels the context
// of the call in flight: an at-least-once handler counts that value as
// Discarded even when the call was its last attempt, as it does for an
// earlier one, and does not dead-letter it with the cancellation as its
// error.
func TestDiscardingHandlerStopDuringTheLastAttemptDiscardsTheValue(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"DiscardOnStop", "Shutdown"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				var losses hLosses[hJob]
				dead, _ := b.Subscribe(topic.Buffer[topic.DeadLetter[hJob]](1))
				opts := []topic.Option[hJob]{losses.hook(), topic.Retry[hJob](topic.RetryPolicy{Attempts: 2})}
				if how == "DiscardOnStop" {
					opts = append(opts, topic.DiscardOnStop[hJob]())
				}
				attempt := 0
				stop := b.Handle(func(ctx context.Context, _ hJob) error {
					if attempt++; attempt == 1 {
						return errHandler // the first attempt fails at once
					}
					<-ctx.Done()
					return ctx.Err()
				}, opts...)
				b.Publish(hJob{N: 1})
				synctest.Wait() // in the second, last, attempt
				if how == "Shutdown" {
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					defer cancel()
					if err := b.Shutdown(ctx); err != context.DeadlineExceeded {
						t.Errorf("Shutdown = %v, want %v", err, context.DeadlineExceeded)
					}
				}
				stop()
				if ds := takeAll(dead); len(ds) != 0 {
					t.Errorf("dead-lettered %+v after the handler cancelled the attempt itself", ds)
				}
				hWantLosses(t, &losses, topic.Loss[hJob]{Cause: topic.Discarded, Value: hJob{N: 1}, Err: context.Canceled})
			})
		})
	}
}

func TestHandlerStopIsIdempotentAndEveryCallWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		start := b.Goroutines()
		gate := make(chan struct{})
		stop := b.Handle(func(context.Context, hJob) error {
			<-gate
			return nil
		})
		b.Publish(hJob{N: 1})
		synctest.Wait()
		var returned atomic.Int32
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				stop()
				returned.Add(1)
			})
		}
		synctest.Wait()
		if n := returned.Load(); n != 0 {
			t.Fatalf("%d concurrent stops returned before the call in flight", n)
		}
		close(gate)
		wg.Wait()
		stop() // again, after the end
		synctest.Wait()
		if n := b.Goroutines(); n != start {
			t.Errorf("%d handler goroutines after stop, want %d", n, start)
		}
	})
}

func TestStoppedHandlersLeaveNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		start := b.Goroutines()
		var stops []func()
		for i := range 10 {
			opts := []topic.Option[hJob]{topic.Buffer[hJob](4)}
			if i%3 != 2 {
				opts = append(opts, topic.Retry[hJob](topic.RetryPolicy{Attempts: 3, Base: time.Second}))
			}
			switch {
			case i < 5 && i%2 == 0:
				opts = append(opts, topic.DiscardOnStop[hJob]())
			case i < 5:
				opts = append(opts, topic.AttemptTimeout[hJob](time.Minute))
			}
			stops = append(stops, b.Handle(func(ctx context.Context, j hJob) error {
				if j.N == 0 {
					<-ctx.Done() // until stopped, timed out or shut down
				}
				return errHandler
			}, opts...))
		}
		if n := b.Goroutines(); n != start+10 {
			t.Errorf("%d handler goroutines for 10 handlers, want %d", n, start+10)
		}
		for i := range 3 {
			b.Publish(hJob{N: i})
		}
		synctest.Wait()
		for _, stop := range stops[:5] {
			stop()
		}
		synctest.Wait()
		if n := b.Goroutines(); n != start+5 {
			t.Errorf("%d handler goroutines after 5 stops, want %d", n, start+5)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if err := b.Shutdown(ctx); err != context.DeadlineExceeded {
			t.Errorf("Shutdown = %v, want %v: handlers wait for their contexts", err, context.DeadlineExceeded)
		}
		for _, stop := range stops {
			stop()
		}
		synctest.Wait()
		if n := b.Goroutines(); n != start {
			t.Errorf("%d handler goroutines after Shutdown, want %d", n, start)
		}
		// And none of any kind: synctest.Test fails if a goroutine of the
		// bubble is left blocked when this function returns.
	})
}

func TestShutdownPastItsDeadlineDiscardsAndCancels(t *testing.T) {
	for _, retry := range []bool{false, true} {
		t.Run(fmt.Sprintf("retry=%v", retry), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				var losses hLosses[hJob]
				start := b.Goroutines()
				opts := []topic.Option[hJob]{losses.hook()}
				if retry {
					opts = append(opts, topic.Retry[hJob](topic.RetryPolicy{Attempts: 3}))
				}
				var seen error
				handled := 0
				stop := b.Handle(func(ctx context.Context, j hJob) error {
					if j.N == 0 {
						<-ctx.Done() // stuck until cancelled
						seen = ctx.Err()
						return ctx.Err()
					}
					handled++
					return nil
				}, opts...)
				ch, _ := b.Subscribe[hOther]()
				for i := range 4 {
					b.Publish(hJob{N: i})
				}
				synctest.Wait()

				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				t0 := time.Now()
				if err := b.Shutdown(ctx); err != context.DeadlineExceeded {
					t.Errorf("Shutdown = %v, want %v", err, context.DeadlineExceeded)
				}
				if d := time.Since(t0); d != time.Second {
					t.Errorf("Shutdown returned after %v, want 1s", d)
				}
				stop()
				synctest.Wait()
				if seen != context.Canceled {
					t.Errorf("stuck call saw %v, want %v", seen, context.Canceled)
				}
				if handled != 0 {
					t.Errorf("%d values handled after the deadline, want 0", handled)
				}
				// The call in flight fails as its context is cancelled: the
				// value is discarded, not retried, not counted Errored.
				inFlight := topic.Loss[hJob]{Cause: topic.Discarded, Value: hJob{N: 0}, Err: context.Canceled}
				hWantLosses(t, &losses, inFlight,
					topic.Loss[hJob]{Cause: topic.Discarded, Value: hJob{N: 1}},
					topic.Loss[hJob]{Cause: topic.Discarded, Value: hJob{N: 2}},
					topic.Loss[hJob]{Cause: topic.Discarded, Value: hJob{N: 3}})
				if _, ok := <-ch; ok {
					t.Error("channel subscription not closed by Shutdown")
				}
				if n := b.Goroutines(); n != start {
					t.Errorf("%d handler goroutines after Shutdown, want %d", n, start)
				}
			})
		})
	}
}

func TestShutdownWithoutDeadlineDrainsEveryHandler(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		var got []int
		failed := false
		stop := b.Handle(func(_ context.Context, j hJob) error {
			if j.N == 2 && !failed {
				failed = true
				return errHandler
			}
			got = append(got, j.N)
			return nil
		}, topic.Retry[hJob](topic.RetryPolicy{Attempts: 2, Base: time.Minute}))
		others := 0
		b.Handle(func(_ context.Context, v hOther) error {
			others++
			return nil
		})
		for i := range 5 {
			b.Publish(hJob{N: i})
			b.Publish(hOther{N: i})
		}
		t0 := time.Now()
		if err := b.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown = %v, want nil", err)
		}
		if d := time.Since(t0); d != time.Minute {
			t.Errorf("Shutdown returned after %v, want 1m: the retry's back-off", d)
		}
		if !slices.Equal(got, []int{0, 1, 2, 3, 4}) || others != 5 {
			t.Errorf("handled %v and %d others, want [0 1 2 3 4] and 5", got, others)
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Errorf("second Shutdown = %v, want nil", err)
		}
		stop()
	})
}

func TestAfterShutdownPublishSubscribeAndHandleDoNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		before, cancelBefore := b.Subscribe(topic.Buffer[hJob](4))
		b.Publish(hJob{N: 1})
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown = %v", err)
		}
		start := b.Goroutines()

		b.Publish(hJob{N: 2})
		if got := takeAll(before); !slices.Equal(got, []hJob{{N: 1}}) {
			t.Errorf("subscription made before Shutdown received %v, want [{0 1}] then closed", got)
		}
		cancelBefore()

		ch, cancel := b.Subscribe(topic.Buffer[hJob](4))
		b.Publish(hJob{N: 3})
		if v, ok := <-ch; ok {
			t.Errorf("Subscribe after Shutdown received %v, want a closed channel", v)
		}
		cancel()
		cancel()

		called := false
		stop := b.Handle(func(context.Context, hJob) error {
			called = true
			return nil
		})
		if n := b.Goroutines(); n != start {
			t.Errorf("Handle after Shutdown started %d handler goroutines", n-start)
		}
		b.Publish(hJob{N: 4})
		stop()
		stop()
		synctest.Wait()
		if called {
			t.Error("handler registered after Shutdown was called")
		}
		// The snapshot is Shutdown's final one: the subscription it closed,
		// which counts each publication made since as Closed.
		ss := b.Subscriptions()
		if len(ss) != 1 || ss[0].Lost != (topic.Lost{Closed: 3}) || ss[0].Queued != 0 {
			t.Errorf("Subscriptions after Shutdown = %v, want the one closed, with 3 Closed", ss)
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Errorf("second Shutdown = %v", err)
		}
	})
}

func TestHandlerMayUseItsBrokerReentrantly(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		echo, cancelEcho := b.Subscribe(topic.Buffer[hEcho](4))
		defer cancelEcho()
		others := 0
		stopOther := b.Handle(func(context.Context, hOther) error {
			others++
			return nil
		})
		newHandled := make(chan int, 1)
		var stopNew, stopSelf func()
		calls := 0
		done := make(chan struct{})
		stopSelf = b.Handle(func(_ context.Context, j hJob) error {
			calls++
			if j.N != 0 {
				return nil
			}
			b.Publish(hEcho{N: j.N})                               // publish
			ch, cancel := b.Subscribe[hJob](topic.Buffer[hJob](1)) // subscribe to its own type
			b.Publish(hJob{N: 100})                                // reaches ch, and its own queue
			if v := <-ch; v.N != 100 {
				t.Errorf("own subscription received %v", v)
			}
			cancel() // cancel
			cancel()
			stopNew = b.Handle(func(_ context.Context, v hNew) error { // register
				newHandled <- v.N
				return nil
			})
			b.Publish(hNew{N: 7})
			if n := <-newHandled; n != 7 {
				t.Errorf("new handler handled %d", n)
			}
			b.Publish(hOther{N: 1})
			stopOther() // stop another handler: it drains first
			if others != 1 {
				t.Errorf("stopped handler handled %d values, want 1", others)
			}
			_ = b.Subscriptions()
			stopSelf() // stop itself
			close(done)
			return nil
		}, topic.Buffer[hJob](4))
		b.Publish(hJob{N: 0})
		<-done
		stopSelf()
		stopNew()
		if calls != 2 {
			t.Errorf("%d calls, want 2: the value it published to itself is drained", calls)
		}
		if got := takeAll(echo); !slices.Equal(got, []hEcho{{N: 0}}) {
			t.Errorf("echo received %v", got)
		}
		if ss := b.Subscriptions(); len(ss) != 1 {
			t.Errorf("%d subscriptions left, want only echo", len(ss))
		}
	})
}

func TestShutdownFromInsideAHandlerDoesNotWaitForIt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		result := make(chan error, 1)
		var got []int
		stop := b.Handle(func(_ context.Context, j hJob) error {
			got = append(got, j.N)
			if j.N == 0 {
				result <- b.Shutdown(context.Background())
			}
			return nil
		})
		others := 0
		b.Handle(func(context.Context, hOther) error {
			others++
			return nil
		})
		for i := range 3 {
			b.Publish(hOther{N: i})
		}
		b.Publish(hJob{N: 0})
		b.Publish(hJob{N: 1})
		if err := <-result; err != nil {
			t.Errorf("Shutdown from a handler = %v, want nil", err)
		}
		if others != 3 {
			t.Errorf("Shutdown returned before the other handler drained: %d of 3", others)
		}
		stop()
		if !slices.Equal(got, []int{0, 1}) {
			t.Errorf("handled %v, want [0 1]: the caller drains too", got)
		}
	})
}

func TestDeadLettersReachTypedAndInterfaceSubscriptions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		jobs, _ := b.Subscribe(topic.Buffer[topic.DeadLetter[hJob]](4))
		others, _ := b.Subscribe(topic.Buffer[topic.DeadLetter[hOther]](4))
		all, _ := b.Subscribe(topic.Buffer[topic.DeadLettered](4))
		stopJobs := b.Handle(func(context.Context, hJob) error { return errHandler },
			topic.Retry[hJob](topic.RetryPolicy{Attempts: 2}), topic.Name[hJob]("jobs"))
		stopOthers := b.Handle(func(context.Context, hOther) error { return errHandler },
			topic.Retry[hOther](topic.RetryPolicy{Attempts: 1}))
		b.Publish(hJob{N: 1})
		stopJobs()
		b.Publish(hOther{N: 2})
		stopOthers()

		wantJob := topic.DeadLetter[hJob]{Value: hJob{N: 1}, Err: errHandler, Attempts: 2, Handler: "jobs"}
		wantOther := topic.DeadLetter[hOther]{Value: hOther{N: 2}, Err: errHandler, Attempts: 1}
		if got := takeAll(jobs); !slices.Equal(got, []topic.DeadLetter[hJob]{wantJob}) {
			t.Errorf("DeadLetter[hJob] received %+v, want %+v", got, wantJob)
		}
		if got := takeAll(others); !slices.Equal(got, []topic.DeadLetter[hOther]{wantOther}) {
			t.Errorf("DeadLetter[hOther] received %+v, want %+v", got, wantOther)
		}
		got := takeAll(all)
		var letters []topic.Letter
		for _, d := range got {
			letters = append(letters, d.Letter())
		}
		want := []topic.Letter{wantJob.Letter(), wantOther.Letter()}
		if !slices.Equal(letters, want) {
			t.Errorf("DeadLettered received %+v, want %+v", letters, want)
		}
		if want[0] != (topic.Letter{Value: hJob{N: 1}, Err: errHandler, Attempts: 2, Handler: "jobs"}) {
			t.Errorf("DeadLetter.Letter() = %+v", want[0])
		}
	})
}

func TestFailingHandlersOfDeadLettersDoNotLoop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		var allLosses hLosses[topic.DeadLettered]
		var typedLosses hLosses[topic.DeadLetter[hJob]]
		var anyLosses hLosses[any]
		letters, _ := b.Subscribe(topic.Buffer[topic.DeadLettered](16), topic.Name[topic.DeadLettered]("letters"))
		allCalls, typedCalls, anyCalls := 0, 0, 0
		// fail fails, but for the first 100 calls only, so that a loop of
		// dead letters would end, and fail the test rather than hang it.
		fail := func(calls *int) error {
			if *calls++; *calls > 100 {
				return nil
			}
			return errHandler
		}
		stops := []func(){
			b.Handle(func(context.Context, hJob) error { return errHandler },
				topic.Retry[hJob](topic.RetryPolicy{Attempts: 1})),
			b.Handle(func(context.Context, topic.DeadLettered) error { return fail(&allCalls) },
				topic.Retry[topic.DeadLettered](topic.RetryPolicy{Attempts: 3}), allLosses.hook(),
				topic.Name[topic.DeadLettered]("all")),
			b.Handle(func(context.Context, topic.DeadLetter[hJob]) error { return fail(&typedCalls) },
				topic.Retry[topic.DeadLetter[hJob]](topic.RetryPolicy{Attempts: 2}), typedLosses.hook(),
				topic.Name[topic.DeadLetter[hJob]]("typed")),
			b.Handle(func(context.Context, any) error { return fail(&anyCalls) },
				topic.Retry[any](topic.RetryPolicy{Attempts: 2}), anyLosses.hook(), topic.Name[any]("any")),
		}
		// hJob{1} fails in the hJob handler and in the any handler: two
		// dead letters, DeadLetter[hJob] and DeadLetter[any]. Each fails in
		// every handler it reaches, which loses it, counted as Errored.
		b.Publish(hJob{N: 1})
		synctest.Wait()
		for _, x := range []struct {
			name             string
			deadLettered     uint64
			errored          uint64
			calls, wantCalls int
		}{
			{"all", 0, 2, allCalls, 2 * 3},
			{"typed", 0, 1, typedCalls, 1 * 2},
			{"any", 1, 2, anyCalls, 3 * 2},
		} {
			st := hStats(t, &b, x.name)
			if st.Handler.DeadLettered != x.deadLettered || st.Lost.Errored != x.errored || x.calls != x.wantCalls {
				t.Errorf("%s: dead-lettered %d, errored %d, calls %d; want %d, %d, %d",
					x.name, st.Handler.DeadLettered, st.Lost.Errored, x.calls, x.deadLettered, x.errored, x.wantCalls)
			}
		}
		if n := len(takeAll(letters)); n != 2 || hStats(t, &b, "letters").Lost.Full != 0 {
			t.Errorf("%d dead letters published, want 2", n)
		}
		for _, stop := range stops {
			stop()
		}
		if n := len(allLosses.all()) + len(typedLosses.all()) + len(anyLosses.all()); n != 5 {
			t.Errorf("%d losses reported, want 5", n)
		}
		for _, l := range allLosses.all() {
			if l.Cause != topic.Errored || !errors.Is(l.Err, errHandler) {
				t.Errorf("loss %v of a dead letter, want Errored with the handler's error", l)
			}
		}
	})
}

func TestSlowHandlerSlowsNobody(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const n, buffer = 1000, 4
		var b topic.Broker
		release := make(chan struct{})
		stopSlow := b.Handle(func(ctx context.Context, j hJob) error {
			<-release
			return nil
		}, topic.Buffer[hJob](buffer), topic.Name[hJob]("slow"))
		var fast []int
		stopFast := b.Handle(func(_ context.Context, j hJob) error {
			fast = append(fast, j.N)
			return nil
		}, topic.Buffer[hJob](n), topic.Name[hJob]("fast"))
		ch, cancel := b.Subscribe(topic.Buffer[hJob](n), topic.Name[hJob]("channel"))
		defer cancel()

		b.Publish(hJob{N: 0})
		synctest.Wait() // the slow handler is in its call
		t0 := time.Now()
		for i := 1; i < n; i++ {
			b.Publish(hJob{N: i}) // a blocked publisher would deadlock the bubble
		}
		if d := time.Since(t0); d != 0 {
			t.Errorf("publishing took %v", d)
		}
		synctest.Wait()
		slow := hStats(t, &b, "slow")
		if slow.Queued != buffer || slow.Lost.Full != n-1-buffer || slow.Capacity != buffer {
			t.Errorf("slow handler: queued %d, full %d, capacity %d; want %d, %d, %d",
				slow.Queued, slow.Lost.Full, slow.Capacity, buffer, n-1-buffer, buffer)
		}
		if st := hStats(t, &b, "fast"); st.Handler.Handled != n || st.Lost.Total() != 0 {
			t.Errorf("fast handler: handled %d, lost %+v; want %d and none", st.Handler.Handled, st.Lost, n)
		}
		got := takeAll(ch)
		if len(got) != n || got[n-1].N != n-1 {
			t.Errorf("channel subscription received %d values, want %d", len(got), n)
		}
		close(release)
		stopSlow()
		stopFast()
		if len(fast) != n {
			t.Errorf("fast handler handled %d values, want %d", len(fast), n)
		}
	})
}

func TestSubscriptionsShowHandlerCountsAndQueue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		gate := make(chan struct{})
		stopAudit := b.Handle(func(_ context.Context, j hJob) error {
			if j.N == 100 {
				<-gate
			}
			if j.N%2 == 1 {
				return errHandler
			}
			return nil
		}, topic.Name[hJob]("audit"), topic.Retry[hJob](topic.RetryPolicy{Attempts: 2}))
		stopLog := b.Handle(func(_ context.Context, j hJob) error {
			if j.N%2 == 1 {
				return errHandler
			}
			return nil
		}, topic.Name[hJob]("log"), topic.Buffer[hJob](200))
		_, cancel := b.Subscribe(topic.Name[hJob]("channel"))
		defer cancel()
		for i := range 10 {
			b.Publish(hJob{N: i})
		}
		synctest.Wait()

		audit := hStats(t, &b, "audit")
		want := topic.HandlerStats{Accepted: 10, Handled: 5, Retried: 5, DeadLettered: 5, AtLeastOnce: true}
		if audit.Handler == nil || *audit.Handler != want {
			t.Errorf("audit.Handler = %+v, want %+v", audit.Handler, want)
		}
		if audit.Type != reflect.TypeFor[hJob]() || audit.Capacity != topic.DefaultHandlerBuffer ||
			audit.Queued != 0 || audit.Lost != (topic.Lost{}) {
			t.Errorf("audit = %+v", audit)
		}
		log := hStats(t, &b, "log")
		want = topic.HandlerStats{Accepted: 10, Handled: 5}
		if log.Handler == nil || *log.Handler != want || log.Lost != (topic.Lost{Errored: 5}) || log.Capacity != 200 {
			t.Errorf("log: %+v, %+v; want %+v, 5 errored, capacity 200", log.Handler, log.Lost, want)
		}
		if st := hStats(t, &b, "channel"); st.Handler != nil {
			t.Errorf("channel subscription has HandlerStats %+v", st.Handler)
		}

		for i := 100; i < 104; i++ {
			b.Publish(hJob{N: i})
		}
		synctest.Wait()
		if st := hStats(t, &b, "audit"); st.Queued != 3 {
			t.Errorf("audit queue holds %d values, want 3", st.Queued)
		}
		close(gate)
		for i := 200; i < 264; i++ { // 64 values: counts published on the way
			b.Publish(hJob{N: i})
		}
		synctest.Wait()
		if h := hStats(t, &b, "log").Handler; h.Accepted != 78 || h.Handled != 39 {
			t.Errorf("log: accepted %d, handled %d; want 78, 39", h.Accepted, h.Handled)
		}
		stopAudit()
		stopLog()
		if hListed(&b, "audit") || hListed(&b, "log") {
			t.Error("stopped handlers still listed")
		}
	})
}

func TestHandlerContextOptionStopsItDraining(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		start := b.Goroutines()
		ctx, cancel := context.WithCancel(context.Background())
		var got []int
		var errs []error
		stop := b.Handle(func(hctx context.Context, j hJob) error {
			got = append(got, j.N)
			errs = append(errs, hctx.Err())
			return nil
		}, topic.Context[hJob](ctx), topic.Name[hJob]("bound"))
		b.Publish(hJob{N: 1})
		b.Publish(hJob{N: 2})
		cancel()
		synctest.Wait() // context.AfterFunc cancels on a goroutine of its own
		b.Publish(hJob{N: 3})
		synctest.Wait()
		if n := b.Goroutines(); n != start {
			t.Errorf("%d handler goroutines once the context ended, want %d", n, start)
		}
		if !slices.Equal(got, []int{1, 2}) || !slices.Equal(errs, []error{nil, nil}) {
			t.Errorf("handled %v with context errors %v, want [1 2], live", got, errs)
		}
		if hListed(&b, "bound") {
			t.Error("handler still listed after its context ended")
		}
		stop()
	})
}

func TestHandleRejectsBadInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		start := b.Goroutines()
		ok := func(context.Context, hJob) error { return nil }
		wantPanic := func(what string, f func()) {
			t.Helper()
			msg, panicked := panicMessage(f)
			if !panicked || !strings.HasPrefix(msg, "topic: ") {
				t.Errorf("%s: panicked %v with %q, want a panic starting with \"topic: \"", what, panicked, msg)
			}
		}
		wantPanic("nil function", func() { b.Handle[hJob](nil) })
		for name, opt := range map[string]topic.Option[hJob]{
			"Retry":          topic.Retry[hJob](topic.RetryPolicy{Attempts: 1}),
			"AttemptTimeout": topic.AttemptTimeout[hJob](time.Second),
			"DiscardOnStop":  topic.DiscardOnStop[hJob](),
		} {
			wantPanic(name+" given to Subscribe", func() { b.Subscribe(opt) })
		}
		for _, p := range []topic.RetryPolicy{
			{Attempts: 0},
			{Attempts: -1},
			{Attempts: 1, Base: -1},
			{Attempts: 1, Max: -time.Second},
			{Attempts: 1, Jitter: -0.1},
			{Attempts: 1, Jitter: 1.1},
		} {
			opt := topic.Retry[hJob](p) // the policy is checked when applied
			wantPanic(fmt.Sprintf("Retry(%+v)", p), func() { b.Handle(ok, opt) })
		}
		if ss := b.Subscriptions(); len(ss) != 0 {
			t.Errorf("rejected calls left subscriptions: %v", ss)
		}
		if n := b.Goroutines(); n != start {
			t.Errorf("rejected calls left %d handler goroutines", n-start)
		}
		for _, p := range []topic.RetryPolicy{
			{Attempts: 1},
			{Attempts: 2, Jitter: 1},
			{Attempts: 3, Base: time.Second, Jitter: 0.5},
		} {
			b.Handle(ok, topic.Retry[hJob](p), topic.AttemptTimeout[hJob](-time.Second), topic.Option[hJob]{})()
		}
		_ = b.Shutdown(context.Background())
	})
}

// Attempt tells a handler's function which attempt it is making, through
// retries after errors and panics, with and without an attempt timeout,
// and in a context derived from the handler's; 0 elsewhere.
func TestAttemptCountsTheCallsOfOneValue(t *testing.T) {
	if n := topic.Attempt(context.Background()); n != 0 {
		t.Errorf("Attempt outside a handler = %d, want 0", n)
	}
	for _, timeout := range []time.Duration{0, time.Hour} {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			var got [][2]int
			opts := []topic.Option[int]{topic.Retry[int](topic.RetryPolicy{Attempts: 4, Base: time.Millisecond})}
			if timeout > 0 {
				opts = append(opts, topic.AttemptTimeout[int](timeout))
			}
			b.Handle(func(ctx context.Context, v int) error {
				child, cancel := context.WithCancel(ctx)
				defer cancel()
				n := topic.Attempt(child)
				got = append(got, [2]int{v, n})
				switch {
				case v == 1 && n == 1:
					return errors.New("once")
				case v == 1 && n == 2:
					panic("twice")
				}
				return nil
			}, opts...)
			b.Publish(1)
			b.Publish(2)
			if err := b.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := [][2]int{{1, 1}, {1, 2}, {1, 3}, {2, 1}}
			if !slices.Equal(got, want) {
				t.Errorf("timeout %v: (value, attempt) %v, want %v", timeout, got, want)
			}
		})
	}
}

// hSlot is the value of TestAHandlersQueueHoldsWhatAChannelOfItsCapacityWould.
type hSlot int

// A handler's queue holds what a buffered channel of its capacity would,
// under each policy: while its function holds the first value, of the nine
// published after it DropNewest keeps the first c and loses the rest Full,
// DropOldest keeps the last c and loses the rest Evicted; an unbuffered
// handler (Buffer(0)) accepts the first value, published while it waited,
// and loses every other Full, having no room and no receiver waiting.
func TestAHandlersQueueHoldsWhatAChannelOfItsCapacityWould(t *testing.T) {
	for _, policy := range []topic.Policy{topic.DropNewest, topic.DropOldest} {
		for _, c := range []int{0, 1, 3, 16, 20} {
			t.Run(fmt.Sprintf("%v/%d", policy, c), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					const later = 19
					var b topic.Broker
					release := make(chan struct{})
					var handled []hSlot
					stop := b.Handle(func(_ context.Context, v hSlot) error {
						if v == 0 {
							<-release
						}
						handled = append(handled, v)
						return nil
					}, topic.Buffer[hSlot](c), topic.Overflow[hSlot](policy))
					synctest.Wait() // the worker waits for a value
					b.Publish(hSlot(0))
					synctest.Wait() // the worker holds it
					for v := range later {
						b.Publish(hSlot(v + 1))
					}
					kept := min(c, later)
					want, lost := []hSlot{0}, topic.Lost{}
					for v := range kept {
						if policy == topic.DropOldest {
							want = append(want, hSlot(later-kept+v+1))
						} else {
							want = append(want, hSlot(v+1))
						}
					}
					if policy == topic.DropOldest && c > 0 {
						lost.Evicted = uint64(later - kept)
					} else {
						lost.Full = uint64(later - kept)
					}
					st := b.Subscriptions()[0]
					if st.Queued != kept || st.Capacity != c || st.Lost != lost {
						t.Errorf("with the first value in hand: Queued %d, Capacity %d, Lost %+v; want %d, %d, %+v", st.Queued, st.Capacity, st.Lost, kept, c, lost)
					}
					close(release)
					synctest.Wait()
					stop()
					if !slices.Equal(handled, want) {
						t.Errorf("handled %v, want %v", handled, want)
					}
				})
			})
		}
	}
}

// The values a handler's goroutine took from its queue at once, in a batch,
// and has not given its function yet, still take room in the queue, as in a
// channel they would not have been received yet: with Buffer(3), holding 1
// of the batch 1, 2, 3, the queue has room for one more.
func TestAHandlersBatchTakesRoomInItsQueueUntilHandedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		hold := map[hSlot]chan struct{}{0: make(chan struct{}), 1: make(chan struct{})}
		var handled []hSlot
		stop := b.Handle(func(_ context.Context, v hSlot) error {
			if ch, ok := hold[v]; ok {
				<-ch
			}
			handled = append(handled, v)
			return nil
		}, topic.Buffer[hSlot](3))
		queued := func(when string, want int) {
			t.Helper()
			if st := b.Subscriptions()[0]; st.Queued != want {
				t.Errorf("%s: Queued %d, want %d", when, st.Queued, want)
			}
		}
		b.Publish(hSlot(0))
		synctest.Wait() // the function holds 0
		for v := 1; v <= 4; v++ {
			b.Publish(hSlot(v)) // 4 is lost: the queue holds 1, 2, 3
		}
		queued("0 in hand", 3)
		close(hold[0])
		synctest.Wait() // the batch 1, 2, 3 taken, 1 in hand
		queued("1 in hand", 2)
		b.Publish(hSlot(5))
		b.Publish(hSlot(6)) // lost: 2, 3 and 5 fill the queue
		queued("1 in hand, 5 published", 3)
		close(hold[1])
		synctest.Wait()
		stop()
		if want := []hSlot{0, 1, 2, 3, 5}; !slices.Equal(handled, want) {
			t.Errorf("handled %v, want %v", handled, want)
		}
		if st := b.Subscriptions(); len(st) != 0 {
			t.Errorf("after stop: %d subscriptions", len(st))
		}
	})
}

// An unbuffered handler whose From source re-drives dead letters has two
// queues and one goroutine waiting on both: while it holds the one value
// it accepted, from either, it accepts no other, as a receive on two
// unbuffered channels would take one value.
func TestAnUnbufferedHandlerWithARedriveAcceptsOneValueAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		release := make(chan struct{})
		var handled []hSlot
		stop := b.Handle(func(_ context.Context, v hSlot) error {
			<-release
			handled = append(handled, v)
			return nil
		}, topic.Name[hSlot]("h"), topic.Buffer[hSlot](0),
			topic.From(func(d topic.DeadLetter[hSlot]) (hSlot, bool) { return d.Value, true }))
		synctest.Wait() // the worker waits on both queues
		b.Publish(hSlot(1))
		b.Publish(topic.DeadLetter[hSlot]{Value: 2}) // lost: 1 is in hand
		synctest.Wait()
		if st := hStats(t, &b, "h"); st.Sent != 1 || st.Queued != 0 || st.Lost.Full != 1 {
			t.Errorf("one value in hand: Sent %d, Queued %d, Full %d; want 1, 0, 1", st.Sent, st.Queued, st.Lost.Full)
		}
		close(release)
		synctest.Wait() // waiting again
		b.Publish(topic.DeadLetter[hSlot]{Value: 3})
		synctest.Wait()
		stop()
		if want := []hSlot{1, 3}; !slices.Equal(handled, want) {
			t.Errorf("handled %v, want %v", handled, want)
		}
	})
}

// A DropOldest handler with one publisher never loses a value Full: a
// publication that finds the queue full evicts its oldest value, and the
// one its goroutine takes leaves the queue as it is taken, as from a
// channel, so the next attempt finds room, wherever the goroutine is
// preempted. Goroutines spinning on every processor make the scheduler
// preempt it anywhere.
func TestADropOldestHandlerWithOnePublisherNeverLosesAValueFull(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	n := iterations(400_000)
	for _, capacity := range []int{1, 2, 16} {
		var b topic.Broker
		var stop atomic.Bool
		var spin sync.WaitGroup
		for range 4 {
			spin.Go(func() {
				for !stop.Load() {
				}
			})
		}
		b.Handle(func(context.Context, hSlot) error { return nil },
			topic.Name[hSlot]("h"), topic.Buffer[hSlot](capacity), topic.Overflow[hSlot](topic.DropOldest))
		for i := range n {
			b.Publish(hSlot(i))
		}
		stop.Store(true)
		spin.Wait()
		st := hStats(t, &b, "h")
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st.Lost.Full != 0 {
			t.Errorf("Buffer(%d): %d of %d values lost Full (%d Evicted)", capacity, st.Lost.Full, n, st.Lost.Evicted)
		}
	}
}
