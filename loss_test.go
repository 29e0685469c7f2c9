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

// lossTick is the concrete type most loss tests publish; its value
// implements lossCounted.
type lossTick struct{ N int }

func (t lossTick) Count() int { return t.N }

type lossCounted interface{ Count() int }

// lossAlert is what OnLoss functions publish.
type lossAlert struct{ N int }

// lossLog records what an OnLoss function receives, in order. Its hook may be
// called from several goroutines.
type lossLog[T any] struct {
	mu     sync.Mutex
	losses []topic.Loss[T]
}

func (l *lossLog[T]) hook(x topic.Loss[T]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.losses = append(l.losses, x)
}

func (l *lossLog[T]) all() []topic.Loss[T] {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.losses)
}

// wantLosses checks that log received exactly want, in order.
func wantLosses[T comparable](t *testing.T, name string, log *lossLog[T], want ...topic.Loss[T]) {
	t.Helper()
	if got := log.all(); !slices.Equal(got, want) {
		t.Errorf("%s: OnLoss received %+v, want %+v", name, got, want)
	}
}

// evictions returns the losses of values first..last, all evicted.
func evictions[T any](conv func(int) T, first, last int) []topic.Loss[T] {
	var ls []topic.Loss[T]
	for i := first; i <= last; i++ {
		ls = append(ls, topic.Loss[T]{Cause: topic.Evicted, Value: conv(i)})
	}
	return ls
}

// statsNamed returns the snapshot of the live subscription named name, which
// must be the only one of that name.
func statsNamed(t *testing.T, b *topic.Broker, name string) topic.SubscriptionStats {
	t.Helper()
	var found []topic.SubscriptionStats
	for _, s := range b.Subscriptions() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("Subscriptions lists %d subscriptions named %q, want 1", len(found), name)
	}
	return found[0]
}

// wantLost checks the lost counts of the subscription named name.
func wantLost(t *testing.T, b *topic.Broker, name string, want topic.Lost) {
	t.Helper()
	if got := statsNamed(t, b, name).Lost; got != want {
		t.Errorf("%s: Lost = %+v, want %+v", name, got, want)
	}
}

// wantNoSubscriptions checks that the snapshot lists nothing.
func wantNoSubscriptions(t *testing.T, b *topic.Broker) {
	t.Helper()
	if got := b.Subscriptions(); len(got) != 0 {
		t.Errorf("Subscriptions = %+v, want none", got)
	}
}

func TestDropOldestEvictsTheOldestValuesInOrder(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	// The same policy through each way a value reaches a subscription: its
	// own concrete type, its own interface type, a From source.
	var own lossLog[lossTick]
	ticks, cancelTicks := b.Subscribe(
		topic.Name[lossTick]("own"),
		topic.Buffer[lossTick](3),
		topic.Overflow[lossTick](topic.DropOldest),
		topic.OnLoss(own.hook),
	)
	defer cancelTicks()
	var iface lossLog[lossCounted]
	counted, cancelCounted := b.Subscribe(
		topic.Name[lossCounted]("interface"),
		topic.Buffer[lossCounted](3),
		topic.Overflow[lossCounted](topic.DropOldest),
		topic.OnLoss(iface.hook),
	)
	defer cancelCounted()
	var from lossLog[int]
	ints, cancelInts := b.Subscribe(
		topic.Name[int]("from"),
		topic.Buffer[int](3),
		topic.Overflow[int](topic.DropOldest),
		topic.OnLoss(from.hook),
		topic.From(func(t lossTick) (int, bool) { return t.N, true }),
	)
	defer cancelInts()

	for i := 1; i <= 10; i++ {
		b.Publish(lossTick{N: i})
	}

	for _, name := range []string{"own", "interface", "from"} {
		st := statsNamed(t, &b, name)
		if st.Lost != (topic.Lost{Evicted: 7}) || st.Queued != 3 || st.Policy != topic.DropOldest {
			t.Errorf("%s: Lost = %+v, Queued = %d, Policy = %v; want {Evicted:7}, 3, drop-oldest",
				name, st.Lost, st.Queued, st.Policy)
		}
	}
	wantReceived(t, "own", ticks, lossTick{8}, lossTick{9}, lossTick{10})
	wantReceived[lossCounted](t, "interface", counted, lossTick{8}, lossTick{9}, lossTick{10})
	wantReceived(t, "from", ints, 8, 9, 10)
	wantLosses(t, "own", &own, evictions(func(i int) lossTick { return lossTick{i} }, 1, 7)...)
	wantLosses(t, "interface", &iface, evictions(func(i int) lossCounted { return lossTick{i} }, 1, 7)...)
	wantLosses(t, "from", &from, evictions(func(i int) int { return i }, 1, 7)...)
}

func TestDropNewestDropsTheValueThatDoesNotFitAsFull(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	var log lossLog[int]
	ch, cancel := b.Subscribe(topic.Name[int]("newest"), topic.Buffer[int](3), topic.OnLoss(log.hook))
	defer cancel()
	for i := 1; i <= 10; i++ {
		b.Publish(i)
	}
	st := statsNamed(t, &b, "newest")
	if st.Lost != (topic.Lost{Full: 7}) || st.Policy != topic.DropNewest {
		t.Errorf("Lost = %+v, Policy = %v; want {Full:7}, the default drop-newest", st.Lost, st.Policy)
	}
	wantReceived(t, "newest", ch, 1, 2, 3)
	var want []topic.Loss[int]
	for i := 4; i <= 10; i++ {
		want = append(want, topic.Loss[int]{Cause: topic.Full, Value: i})
	}
	wantLosses(t, "newest", &log, want...)
}

func TestLatestValueSubscriptionHoldsOnlyTheLastValue(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	latest, cancel := b.Subscribe(
		topic.Name[int]("latest"),
		topic.Buffer[int](1),
		topic.Overflow[int](topic.DropOldest),
	)
	defer cancel()

	for i := 1; i <= 5; i++ {
		b.Publish(i)
	}
	if st := statsNamed(t, &b, "latest"); st.Queued != 1 || st.Lost != (topic.Lost{Evicted: 4}) {
		t.Errorf("after 5 publications: Queued = %d, Lost = %+v; want 1, {Evicted:4}", st.Queued, st.Lost)
	}
	wantReceived(t, "latest", latest, 5)

	b.Publish(6) // the buffer is empty: nothing to evict
	wantReceived(t, "latest", latest, 6)
	b.Publish(7)
	b.Publish(8)
	wantReceived(t, "latest", latest, 8)
	wantLost(t, &b, "latest", topic.Lost{Evicted: 5})
}

// lossMark is what the contention tests publish: P identifies the publisher
// and N counts its publications.
type lossMark struct{ P, N int }

// A drop-oldest subscription never blocks its publishers, neither when its
// consumer receives at the same moment nor when it stalls, and keeps each
// publisher's values in order. A blocked publisher would make the bubble
// deadlock, which synctest reports.
func TestDropOldestNeverBlocksPublishersOrReordersTheirValues(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const publishers = 4
		n := iterations(5000)
		var b topic.Broker
		ch, cancel := b.Subscribe(
			topic.Name[lossMark]("oldest"),
			topic.Buffer[lossMark](2),
			topic.Overflow[lossMark](topic.DropOldest),
		)

		resume := make(chan struct{})
		var received int
		var disorder []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			last := [publishers]int{-1, -1, -1, -1}
			for m := range ch {
				received++
				if m.N <= last[m.P] {
					disorder = append(disorder, fmt.Sprintf("publisher %d: %d after %d", m.P, m.N, last[m.P]))
				}
				last[m.P] = m.N
				if received == n/4 {
					<-resume // stall: the publishers must still finish
				}
			}
		}()

		var wg sync.WaitGroup
		for p := range publishers {
			wg.Go(func() {
				for i := range n {
					b.Publish(lossMark{P: p, N: i})
					runtime.Gosched() // let the consumer run, and receive at the same moment
				}
			})
		}
		wg.Wait()
		close(resume)
		lost := statsNamed(t, &b, "oldest").Lost
		cancel()
		<-done

		if len(disorder) > 0 {
			t.Errorf("values received out of publication order: %v", disorder)
		}
		if lost.Failed != 0 {
			t.Errorf("Lost.Failed = %d, want 0: no From function", lost.Failed)
		}
		if got := uint64(received) + lost.Total(); got != publishers*uint64(n) {
			t.Errorf("received %d + lost %+v = %d, want the %d published", received, lost, got, publishers*n)
		}
		t.Logf("published %d, received %d, lost %+v", publishers*n, received, lost)
	})
}

func TestUnbufferedDropOldestDropsTheNewValueAsFull(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		var log lossLog[int]
		ch, cancel := b.Subscribe(
			topic.Name[int]("unbuffered"),
			topic.Buffer[int](0),
			topic.Overflow[int](topic.DropOldest),
			topic.OnLoss(log.hook),
		)
		defer cancel()

		b.Publish(1) // nobody is receiving, and nothing is queued to evict
		b.Publish(2)

		got := make(chan int)
		go func() { got <- <-ch }()
		synctest.Wait() // the receiver is now blocked in <-ch
		b.Publish(3)
		if v := <-got; v != 3 {
			t.Errorf("waiting receiver got %d, want 3", v)
		}

		st := statsNamed(t, &b, "unbuffered")
		st.Made = "" // see TestEverySubscriptionSaysWhereItWasMade
		want := topic.SubscriptionStats{
			Type: st.Type, Name: "unbuffered", Policy: topic.DropOldest,
			Capacity: 0, Queued: 0, Lost: topic.Lost{Full: 2}, Sent: 1, Matched: 3,
		}
		if st != want {
			t.Errorf("Subscriptions = %+v, want %+v", st, want)
		}
		wantLosses(t, "unbuffered", &log,
			topic.Loss[int]{Cause: topic.Full, Value: 1},
			topic.Loss[int]{Cause: topic.Full, Value: 2})
	})
}

// A panicking OnLoss function is recovered: the publisher carries on, the
// function is called again for the next loss, the value that caused an
// eviction is still queued, and other subscriptions receive as usual.
func TestLossHookPanicDoesNotReachThePublisher(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	var newestCalls, oldestCalls, failedCalls int
	newest, cancelNewest := b.Subscribe(
		topic.Buffer[lossTick](1),
		topic.OnLoss(func(topic.Loss[lossTick]) { newestCalls++; panic("newest") }),
	)
	defer cancelNewest()
	oldest, cancelOldest := b.Subscribe(
		topic.Buffer[lossTick](1),
		topic.Overflow[lossTick](topic.DropOldest),
		topic.OnLoss(func(topic.Loss[lossTick]) { oldestCalls++; panic(errors.New("oldest")) }),
	)
	defer cancelOldest()
	failing, cancelFailing := b.Subscribe(
		topic.Buffer[string](4),
		topic.From(func(t lossTick) (string, bool) { panic("from") }),
		topic.OnLoss(func(topic.Loss[string]) { failedCalls++; panic("hook") }),
	)
	defer cancelFailing()
	other, cancelOther := b.Subscribe(topic.Buffer[lossTick](4))
	defer cancelOther()

	if msg, panicked := panicMessage(func() {
		for i := 1; i <= 3; i++ {
			b.Publish(lossTick{i})
		}
	}); panicked {
		t.Fatalf("Publish panicked with %q", msg)
	}

	if newestCalls != 2 || oldestCalls != 2 || failedCalls != 3 {
		t.Errorf("OnLoss calls: newest %d, oldest %d, failed %d; want 2, 2, 3",
			newestCalls, oldestCalls, failedCalls)
	}
	wantReceived(t, "drop-newest", newest, lossTick{1})
	wantReceived(t, "drop-oldest", oldest, lossTick{3})
	wantReceived(t, "failing", failing)
	wantReceived(t, "other", other, lossTick{1}, lossTick{2}, lossTick{3})
}

// A From function that panics loses that value for its subscription alone,
// counted as Failed and reported with the published value and the panic;
// later sources, later subscriptions and the publisher carry on.
func TestPanickingFromLosesTheValueForItsSubscriptionOnly(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	boom := errors.New("boom")
	var concrete lossLog[string]
	failing, cancelFailing := b.Subscribe(
		topic.Name[string]("concrete source"),
		topic.Buffer[string](4),
		topic.From(func(t lossTick) (string, bool) {
			if t.N == 2 {
				panic(boom)
			}
			return fmt.Sprint(t.N), true
		}),
		topic.OnLoss(concrete.hook),
	)
	defer cancelFailing()
	var iface lossLog[int]
	ifaceFailing, cancelIfaceFailing := b.Subscribe(
		topic.Name[int]("interface source"),
		topic.Buffer[int](4),
		topic.From(func(c lossCounted) (int, bool) {
			if c.Count() == 3 {
				panic("three")
			}
			return c.Count(), true
		}),
		topic.OnLoss(iface.hook),
	)
	defer cancelIfaceFailing()
	plain, cancelPlain := b.Subscribe(topic.Buffer[lossTick](4))
	defer cancelPlain()
	later, cancelLater := b.Subscribe(
		topic.Buffer[int](4),
		topic.From(func(t lossTick) (int, bool) { return 10 * t.N, true }),
	)
	defer cancelLater()
	counted, cancelCounted := b.Subscribe(topic.Buffer[lossCounted](4))
	defer cancelCounted()

	if msg, panicked := panicMessage(func() {
		for i := 1; i <= 3; i++ {
			b.Publish(lossTick{i})
		}
	}); panicked {
		t.Fatalf("Publish panicked with %q", msg)
	}

	wantReceived(t, "concrete source", failing, "1", "3")
	wantReceived(t, "interface source", ifaceFailing, 1, 2)
	wantReceived(t, "plain", plain, lossTick{1}, lossTick{2}, lossTick{3})
	wantReceived(t, "later", later, 10, 20, 30)
	wantReceived[lossCounted](t, "interface", counted, lossTick{1}, lossTick{2}, lossTick{3})
	wantLost(t, &b, "concrete source", topic.Lost{Failed: 1})
	wantLost(t, &b, "interface source", topic.Lost{Failed: 1})
	wantLosses(t, "concrete source", &concrete,
		topic.Loss[string]{Cause: topic.Failed, Source: lossTick{2}, Panic: boom})
	wantLosses(t, "interface source", &iface,
		topic.Loss[int]{Cause: topic.Failed, Source: lossTick{3}, Panic: "three"})
}

// A From function that returns false filters the value: it is not lost, so
// it is neither counted nor reported.
func TestFromReturningFalseIsFilteredNotLost(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	var log lossLog[int]
	evens, cancel := b.Subscribe(
		topic.Name[int]("evens"),
		topic.Buffer[int](2),
		topic.From(func(t lossTick) (int, bool) { return t.N, t.N%2 == 0 }),
		topic.OnLoss(log.hook),
	)
	defer cancel()
	for i := 1; i <= 6; i++ {
		b.Publish(lossTick{i}) // 1, 3, 5 filtered; 6 finds the buffer full
	}
	wantReceived(t, "evens", evens, 2, 4)
	wantLost(t, &b, "evens", topic.Lost{Full: 1})
	wantLosses(t, "evens", &log, topic.Loss[int]{Cause: topic.Full, Value: 6})
}

// OnLoss runs before Publish returns, on its goroutine: the plain variable
// it writes is read after Publish without synchronisation, which -race
// would report if another goroutine had written it.
func TestOnLossRunsBeforePublishReturns(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	var seen []int
	_, cancel := b.Subscribe(
		topic.Buffer[int](0),
		topic.OnLoss(func(l topic.Loss[int]) { seen = append(seen, l.Value) }),
	)
	defer cancel()
	for i := 1; i <= 3; i++ {
		b.Publish(i)
		if len(seen) != i || seen[i-1] != i {
			t.Fatalf("after Publish(%d) returned, OnLoss had seen %v", i, seen)
		}
	}
}

// OnLoss is called after the loss is counted, so a snapshot taken inside it
// already includes it.
func TestOnLossSeesTheLossAlreadyCounted(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	var inside []topic.Lost
	_, cancel := b.Subscribe(
		topic.Name[int]("watched"),
		topic.Buffer[int](1),
		topic.OnLoss(func(topic.Loss[int]) { inside = append(inside, statsNamed(t, &b, "watched").Lost) }),
	)
	defer cancel()
	for i := range 3 {
		b.Publish(i)
	}
	if want := []topic.Lost{{Full: 1}, {Full: 2}}; !slices.Equal(inside, want) {
		t.Errorf("counts seen inside OnLoss: %+v, want %+v", inside, want)
	}
}

// OnLoss may cancel its own subscription, under either policy; the channel
// is then closed and nothing more reaches the subscription or its function.
func TestOnLossCanCancelItsOwnSubscription(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy topic.Policy
		want   []lossTick // what the channel holds when closed
	}{
		// 2 is lost; 1 stays queued.
		{topic.DropNewest, []lossTick{{1}}},
		// 1 is evicted; 2 is not sent, the subscription being cancelled.
		{topic.DropOldest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.policy.String(), func(t *testing.T) {
			t.Parallel()
			var b topic.Broker
			var calls int
			var cancel func()
			ch, cancel := b.Subscribe(
				topic.Buffer[lossTick](1),
				topic.Overflow[lossTick](tt.policy),
				topic.OnLoss(func(topic.Loss[lossTick]) {
					calls++
					cancel()
					cancel() // still idempotent from inside
				}),
			)
			b.Publish(lossTick{1})
			b.Publish(lossTick{2})
			wantClosed(t, "self-cancelled", ch, tt.want...)
			b.Publish(lossTick{3})
			b.Publish(lossTick{4})
			if calls != 1 {
				t.Errorf("OnLoss called %d times, want 1", calls)
			}
			wantNoSubscriptions(t, &b)
		})
	}
}

// OnLoss may publish and subscribe on the broker that called it; a
// subscription it makes receives the publications that follow.
func TestOnLossCanPublishAndSubscribe(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	alerts, cancelAlerts := b.Subscribe(topic.Buffer[lossAlert](4))
	defer cancelAlerts()
	var late <-chan lossTick
	var cancelLate func()
	ch, cancel := b.Subscribe(
		topic.Buffer[lossTick](1),
		topic.OnLoss(func(l topic.Loss[lossTick]) {
			b.Publish(lossAlert{N: l.Value.N})
			if late == nil {
				late, cancelLate = b.Subscribe(topic.Buffer[lossTick](4))
			}
		}),
	)
	defer cancel()

	b.Publish(lossTick{1})
	b.Publish(lossTick{2}) // lost: alerts, and subscribes late
	if late == nil {
		t.Fatal("OnLoss did not subscribe")
	}
	defer cancelLate()
	takeAll(late) // whether late saw 2, subscribed during its publication, is unspecified
	b.Publish(lossTick{3})

	wantReceived(t, "subscription with OnLoss", ch, lossTick{1})
	wantReceived(t, "alerts", alerts, lossAlert{2}, lossAlert{3})
	wantReceived(t, "subscribed by OnLoss", late, lossTick{3})
}

func TestSubscriptionsDescribesEachLiveSubscription(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	_, cancel1 := b.Subscribe(topic.Name[lossTick]("ticks"), topic.Buffer[lossTick](4))
	defer cancel1()
	_, cancel2 := b.Subscribe(
		topic.Name[lossTick]("a latest"),
		topic.Buffer[lossTick](1),
		topic.Overflow[lossTick](topic.DropOldest),
	)
	defer cancel2()
	_, cancel3 := b.Subscribe[any]()
	defer cancel3()
	_, cancel4 := b.Subscribe(topic.Buffer[lossCounted](0))
	defer cancel4()
	_, cancel5 := b.Subscribe(
		topic.Name[string]("from"),
		topic.Buffer[string](8),
		topic.From(func(k lossTick) (string, bool) {
			if k.N == 2 {
				panic(k)
			}
			return "", k.N != 3
		}),
	)
	defer cancel5()

	for i := 1; i <= 3; i++ {
		b.Publish(lossTick{i})
	}

	tick := reflect.TypeFor[lossTick]()
	want := []topic.SubscriptionStats{ // by type as printed, then name
		{Type: reflect.TypeFor[any](), Policy: topic.DropNewest, Capacity: 1, Queued: 1, Lost: topic.Lost{Full: 2}, Sent: 1, Matched: 3},
		{Type: reflect.TypeFor[string](), Name: "from", Capacity: 8, Queued: 1, Lost: topic.Lost{Failed: 1}, Sent: 1, Rejected: 1, Matched: 3},
		{Type: reflect.TypeFor[lossCounted](), Capacity: 0, Queued: 0, Lost: topic.Lost{Full: 3}, Matched: 3},
		{Type: tick, Name: "a latest", Policy: topic.DropOldest, Capacity: 1, Queued: 1, Lost: topic.Lost{Evicted: 2}, Sent: 3, Matched: 3},
		{Type: tick, Name: "ticks", Capacity: 4, Queued: 3, Sent: 3, Matched: 3},
	}
	got := b.Subscriptions()
	for i := range got {
		got[i].Made = "" // see TestEverySubscriptionSaysWhereItWasMade
	}
	if !slices.Equal(got, want) {
		t.Errorf("Subscriptions =\n%s\nwant\n%s", showStats(got), showStats(want))
	}
}

// showStats prints a snapshot one subscription a line.
func showStats(ss []topic.SubscriptionStats) string {
	var lines []string
	for _, s := range ss {
		lines = append(lines, fmt.Sprintf("\t%v %q %v cap=%d queued=%d lost=%+v sent=%d rejected=%d matched=%d",
			s.Type, s.Name, s.Policy, s.Capacity, s.Queued, s.Lost, s.Sent, s.Rejected, s.Matched))
	}
	return strings.Join(lines, "\n")
}

// A subscription is listed from the moment it is made, before anything
// has been published to it, whatever its sources.
func TestSubscriptionsListsSubscriptionsNothingHasReached(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	_, cancel1 := b.Subscribe[lossCounted]()
	defer cancel1()
	_, cancel2 := b.Subscribe(topic.Name[any]("any"))
	defer cancel2()
	_, cancel3 := b.Subscribe(topic.From(func(c lossCounted) (int, bool) { return c.Count(), true }))
	defer cancel3()
	_, cancel4 := b.Subscribe[lossTick]()
	defer cancel4()
	_, cancel5 := b.Subscribe(topic.From(func(t lossTick) (string, bool) { return "", true }))
	defer cancel5()
	_, cancel6 := b.Subscribe[error]() // no type routed so far implements it
	defer cancel6()

	var got []string
	for _, s := range b.Subscriptions() {
		got = append(got, s.Type.String())
	}
	want := []string{"error", "int", "interface {}", "string", "topic_test.lossCounted", "topic_test.lossTick"}
	if !slices.Equal(got, want) {
		t.Errorf("types listed: %q, want %q", got, want)
	}
}

func TestSubscriptionsOfAnEmptyBrokerIsEmpty(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	wantNoSubscriptions(t, &b)
	b.Publish(1)
	wantNoSubscriptions(t, &b)
}

func TestCancelledSubscriptionsLeaveTheSnapshot(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	_, cancelTicks := b.Subscribe(topic.Name[lossTick]("ticks"))
	_, cancelAny := b.Subscribe(topic.Name[any]("any"))
	_, cancelFrom := b.Subscribe(
		topic.Name[int]("from"),
		topic.From(func(t lossTick) (int, bool) { return t.N, true }),
	)
	_, cancelCounted := b.Subscribe(topic.Name[lossCounted]("counted"))
	b.Publish(lossTick{1})

	names := func() []string {
		var ns []string
		for _, s := range b.Subscriptions() {
			ns = append(ns, s.Name)
		}
		return ns
	}
	if got, want := names(), []string{"from", "any", "counted", "ticks"}; !slices.Equal(got, want) {
		t.Errorf("names before cancelling: %q, want %q", got, want)
	}
	cancelAny()
	cancelFrom()
	cancelFrom()
	if got, want := names(), []string{"counted", "ticks"}; !slices.Equal(got, want) {
		t.Errorf("names after cancelling two: %q, want %q", got, want)
	}
	cancelTicks()
	cancelCounted()
	wantNoSubscriptions(t, &b)
}

func TestLastOptionOfEachKindWins(t *testing.T) {
	t.Parallel()
	t.Run("Overflow", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			first, last topic.Policy
			want        int
		}{
			{topic.DropOldest, topic.DropNewest, 1},
			{topic.DropNewest, topic.DropOldest, 2},
		} {
			var b topic.Broker
			ch, cancel := b.Subscribe(
				topic.Name[int]("s"),
				topic.Overflow[int](tt.first),
				topic.Buffer[int](1),
				topic.Overflow[int](tt.last),
			)
			b.Publish(1)
			b.Publish(2)
			if p := statsNamed(t, &b, "s").Policy; p != tt.last {
				t.Errorf("%v then %v: Policy = %v", tt.first, tt.last, p)
			}
			wantReceived(t, tt.first.String()+" then "+tt.last.String(), ch, tt.want)
			cancel()
		}
	})
	t.Run("Name", func(t *testing.T) {
		t.Parallel()
		var b topic.Broker
		_, cancel := b.Subscribe(topic.Name[int]("first"), topic.Buffer[int](2), topic.Name[int]("last"))
		defer cancel()
		if got := b.Subscriptions(); len(got) != 1 || got[0].Name != "last" {
			t.Errorf("Subscriptions = %+v, want one named %q", got, "last")
		}
	})
	t.Run("OnLoss", func(t *testing.T) {
		t.Parallel()
		var b topic.Broker
		var first, last int
		_, cancel := b.Subscribe(
			topic.OnLoss(func(topic.Loss[int]) { first++ }),
			topic.OnLoss(func(topic.Loss[int]) { last++ }),
		)
		defer cancel()
		for i := range 3 {
			b.Publish(i)
		}
		if first != 0 || last != 2 {
			t.Errorf("first OnLoss called %d times, last %d; want 0, 2", first, last)
		}
	})
	t.Run("Context", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			first, stopFirst := context.WithCancel(context.Background())
			defer stopFirst()
			last, stopLast := context.WithCancel(context.Background())
			defer stopLast()
			ch, cancel := b.Subscribe(topic.Context[int](first), topic.Context[int](last))
			defer cancel()
			stopFirst()
			synctest.Wait()
			b.Publish(1)
			wantReceived(t, "after the first context ended", ch, 1)
			stopLast()
			synctest.Wait()
			wantClosed(t, "after the last context ended", ch)
		})
	})
}

// OnLoss(nil) sets no function: given alone it is harmless and the losses
// are still counted; given last it removes an earlier one.
func TestNilOnLossSetsNone(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	ch, cancel := b.Subscribe(topic.Name[int]("alone"), topic.OnLoss[int](nil))
	defer cancel()
	var calls int
	_, cancelLast := b.Subscribe(
		topic.Name[int]("last"),
		topic.OnLoss(func(topic.Loss[int]) { calls++ }),
		topic.OnLoss[int](nil),
	)
	defer cancelLast()

	if msg, panicked := panicMessage(func() {
		for i := range 3 {
			b.Publish(i)
		}
	}); panicked {
		t.Fatalf("Publish panicked with %q", msg)
	}
	wantReceived(t, "alone", ch, 0)
	wantLost(t, &b, "alone", topic.Lost{Full: 2})
	wantLost(t, &b, "last", topic.Lost{Full: 2})
	if calls != 0 {
		t.Errorf("an OnLoss function overridden by OnLoss(nil) was called %d times", calls)
	}
}

// wantPanicAtSubscribe checks that making opt does not panic, that
// subscribing with it does, with a "topic: " message, and that no
// subscription is left behind.
func wantPanicAtSubscribe(t *testing.T, makeOpt func() topic.Option[int]) {
	t.Helper()
	var opt topic.Option[int]
	if msg, panicked := panicMessage(func() { opt = makeOpt() }); panicked {
		t.Fatalf("making the option panicked with %q; the panic belongs to Subscribe", msg)
	}
	var b topic.Broker
	msg, panicked := panicMessage(func() { b.Subscribe(topic.Name[int]("bad"), opt) })
	if !panicked {
		t.Fatal("Subscribe did not panic")
	}
	if !strings.HasPrefix(msg, "topic: ") {
		t.Errorf("Subscribe panicked with %q, want a %q prefix", msg, "topic: ")
	}
	b.Publish(1)
	wantNoSubscriptions(t, &b)
}

func TestUnknownOverflowPolicyPanicsAtSubscribe(t *testing.T) {
	t.Parallel()
	wantPanicAtSubscribe(t, func() topic.Option[int] { return topic.Overflow[int](topic.Policy(7)) })
}

func TestNilContextPanicsAtSubscribe(t *testing.T) {
	t.Parallel()
	var ctx context.Context
	wantPanicAtSubscribe(t, func() topic.Option[int] { return topic.Context[int](ctx) })
}

// When its context ends, a subscription is cancelled as if by its cancel
// function: the values it accepted remain receivable, then the channel is
// closed, it leaves the snapshot, and cancelling it again does nothing.
func TestContextEndCancelsTheSubscription(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		ctx, stop := context.WithCancel(context.Background())
		ch, cancel := b.Subscribe(topic.Name[int]("bound"), topic.Buffer[int](2), topic.Context[int](ctx))
		other, cancelOther := b.Subscribe(topic.Name[int]("unbound"), topic.Buffer[int](2))
		defer cancelOther()
		b.Publish(1)
		statsNamed(t, &b, "bound")

		stop()
		synctest.Wait()
		wantClosed(t, "bound", ch, 1)
		statsNamed(t, &b, "unbound")
		if got := len(b.Subscriptions()); got != 1 {
			t.Errorf("%d subscriptions after the context ended, want 1", got)
		}
		b.Publish(2)
		cancel()
		cancel()
		wantReceived(t, "unbound", other, 1, 2)
	})
}

func TestContextTimeoutCancelsTheSubscription(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		ctx, stop := context.WithTimeout(context.Background(), time.Minute)
		defer stop()
		ch, cancel := b.Subscribe(topic.Name[int]("bound"), topic.Context[int](ctx))
		defer cancel()

		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		b.Publish(1)
		wantReceived(t, "before the deadline", ch, 1)
		statsNamed(t, &b, "bound")

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		wantClosed(t, "after the deadline", ch)
		wantNoSubscriptions(t, &b)
	})
}

// With a context that has already ended, Subscribe returns a cancelled
// subscription, whatever its kind.
func TestAlreadyDoneContextGivesAClosedChannel(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	ctx, stop := context.WithCancel(context.Background())
	stop()

	ticks, cancelTicks := b.Subscribe(topic.Buffer[lossTick](4), topic.Context[lossTick](ctx))
	counted, cancelCounted := b.Subscribe(topic.Buffer[lossCounted](4), topic.Context[lossCounted](ctx))
	ints, cancelInts := b.Subscribe(
		topic.Buffer[int](4),
		topic.Context[int](ctx),
		topic.From(func(t lossTick) (int, bool) { return t.N, true }),
	)
	wantClosed(t, "concrete", ticks)
	wantClosed(t, "interface", counted)
	wantClosed(t, "From", ints)
	wantNoSubscriptions(t, &b)

	b.Publish(lossTick{1})
	for _, cancel := range []func(){cancelTicks, cancelCounted, cancelInts} {
		cancel()
		cancel()
	}
	wantNoSubscriptions(t, &b)
}

// lossWatchedContext never ends; it counts the functions registered with it
// through context.AfterFunc and the ones released by their stop functions.
type lossWatchedContext struct {
	context.Context
	done chan struct{} // never closed: nil would make AfterFunc ignore the context

	mu                   sync.Mutex
	registered, released int
}

func newLossWatchedContext() *lossWatchedContext {
	return &lossWatchedContext{Context: context.Background(), done: make(chan struct{})}
}

func (c *lossWatchedContext) Done() <-chan struct{} { return c.done }

// AfterFunc is what context.AfterFunc calls on a parent that has it.
func (c *lossWatchedContext) AfterFunc(func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.registered++
	var once sync.Once
	return func() bool {
		stopped := false
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.released++
			stopped = true
		})
		return stopped
	}
}

func (c *lossWatchedContext) counts() (registered, released int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registered, c.released
}

// Cancelling a subscription before its context ends releases the context's
// reference to it, once, however often it is cancelled.
func TestCancelBeforeTheContextEndsReleasesIt(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	ctx := newLossWatchedContext()
	_, cancel := b.Subscribe(topic.Context[int](ctx))
	if reg, rel := ctx.counts(); reg != 1 || rel != 0 {
		t.Fatalf("after Subscribe: %d registered, %d released; want 1, 0", reg, rel)
	}
	cancel()
	cancel()
	if reg, rel := ctx.counts(); reg != 1 || rel != 1 {
		t.Errorf("after cancel: %d registered, %d released; want 1, 1", reg, rel)
	}

	// With a context of the standard library, ending it later affects
	// neither the cancelled subscription nor a new one.
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		ctx, stop := context.WithCancel(context.Background())
		ch, cancel := b.Subscribe(topic.Buffer[int](2), topic.Context[int](ctx))
		b.Publish(1)
		cancel()
		wantClosed(t, "cancelled", ch, 1)
		other, cancelOther := b.Subscribe(topic.Buffer[int](2))
		defer cancelOther()
		stop()
		synctest.Wait()
		cancel()
		b.Publish(2)
		wantReceived(t, "other", other, 2)
	})
}

// Binding subscriptions to a live context starts no goroutine; ending it
// cancels every one of them. Not parallel: it counts goroutines.
func TestContextBindingStartsNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		const n = 1000
		chans := make([]<-chan int, n)
		before := runtime.NumGoroutine()
		for i := range chans {
			chans[i], _ = b.Subscribe(topic.Context[int](ctx))
		}
		if grown := runtime.NumGoroutine() - before; grown >= n/10 {
			t.Errorf("%d subscriptions bound to a live context added %d goroutines", n, grown)
		}
		stop()
		synctest.Wait()
		for i, ch := range chans {
			if !isClosed(ch) {
				t.Fatalf("subscription %d still open after its context ended", i)
			}
		}
		wantNoSubscriptions(t, &b)
	})
}

func TestLostTotalSumsTheCauses(t *testing.T) {
	t.Parallel()
	if got := (topic.Lost{Full: 1, Evicted: 20, Failed: 300}).Total(); got != 321 {
		t.Errorf("Total = %d, want 321", got)
	}
	if got := (topic.Lost{}).Total(); got != 0 {
		t.Errorf("zero Lost: Total = %d, want 0", got)
	}
}

func TestCausesAndPoliciesPrintAsWords(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		v    fmt.Stringer
		want string
	}{
		{topic.Full, "full"},
		{topic.Evicted, "evicted"},
		{topic.Failed, "failed"},
		{topic.Cause(0), "Cause(0)"},
		{topic.DropNewest, "drop-newest"},
		{topic.DropOldest, "drop-oldest"},
		{topic.Policy(9), "Policy(9)"},
	} {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("%#v prints as %q, want %q", tt.v, got, tt.want)
		}
	}
	if p := (topic.Policy(0)); p != topic.DropNewest {
		t.Errorf("the zero Policy is %v, want drop-newest", p)
	}
}

// The exact accounting test: several publishers, and a consumer per
// subscription, all at once; then, for every subscription, the values
// published that it matches are exactly those it received, those its From
// function filtered, and those it lost.

// lossEvent is what the accounting publishers send: P identifies the
// publisher, N counts its publications. Its value implements lossOrigin.
type lossEvent struct{ P, N int }

func (e lossEvent) Origin() (p, n int) { return e.P, e.N }

type lossOrigin interface{ Origin() (p, n int) }

// lossBeat is published on a second broker whose subscriptions are all
// plain, so that its publications take the path that counts the drops of a
// saturated route without entering the guard. lossNoise is matched by the
// any subscription alone.
type (
	lossBeat  struct{ P, N int }
	lossNoise struct{ N int }
)

// The kinds of publication of the accounting test, as bits of what a
// subscription matches.
const (
	lossKindEvent  = 1 << iota // a lossEvent, published as itself
	lossKindOrigin             // a lossEvent, published through lossOrigin
	lossKindNoise              // a lossNoise
	lossKindBeat               // a lossBeat, on the second broker
	lossKinds      = iota
)

// lossLedger keeps the test's own counts of one subscription.
type lossLedger struct {
	name   string
	kinds  int // the lossKind bits of the publications it matches
	cancel func()
	done   chan struct{} // closed when the consumer has seen the channel close

	received atomic.Uint64
	filtered atomic.Uint64 // counted by its From function when it returns false
	panicked atomic.Uint64 // counted by its From function before it panics
	hooked   bool
	hooks    [8]atomic.Uint64 // OnLoss calls, by cause

	disorder []string // written by the consumer, read once done is closed
}

// lossHook returns an OnLoss option counting into l.
func lossHook[T any](l *lossLedger) topic.Option[T] {
	l.hooked = true
	return topic.OnLoss(func(x topic.Loss[T]) { l.hooks[x.Cause].Add(1) })
}

// lossConsume starts the consumer of l: it receives from ch until it is
// closed, and checks that the values of each publisher arrive in publication order.
// origin says which publication a value comes from, if it can tell.
func lossConsume[T any](l *lossLedger, ch <-chan T, cancel func(), origin func(T) (p, n int, ok bool)) {
	l.cancel = cancel
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		var last [lossPublishers + 1]int
		for i := range last {
			last[i] = -1
		}
		for v := range ch {
			l.received.Add(1)
			if p, n, ok := origin(v); ok {
				if n <= last[p] && len(l.disorder) < 10 {
					l.disorder = append(l.disorder, fmt.Sprintf("publisher %d: %d after %d", p, n, last[p]))
				}
				last[p] = n
			}
		}
	}()
}

// lossPublishers is the number of concurrent publishers; the warm-up
// publications are numbered as one more.
const lossPublishers = 4

func lossOriginOf[T lossOrigin](v T) (p, n int, ok bool) { p, n = v.Origin(); return p, n, true }

func TestEveryPublishedValueIsReceivedFilteredOrCountedLost(t *testing.T) {
	t.Parallel()
	n := iterations(20000)
	var b, beats topic.Broker
	var ledgers []*lossLedger
	ledger := func(name string, kinds int) *lossLedger {
		l := &lossLedger{name: name, kinds: kinds}
		ledgers = append(ledgers, l)
		return l
	}
	const event, all = lossKindEvent, lossKindEvent | lossKindOrigin

	// A plain subscription: sent to inside the guard.
	l := ledger("plain", event)
	evs, cancel := b.Subscribe(topic.Name[lossEvent](l.name), topic.Buffer[lossEvent](2))
	lossConsume(l, evs, cancel, lossOriginOf)

	l = ledger("oldest", event)
	evs, cancel = b.Subscribe(
		topic.Name[lossEvent](l.name),
		topic.Buffer[lossEvent](3),
		topic.Overflow[lossEvent](topic.DropOldest),
	)
	lossConsume(l, evs, cancel, lossOriginOf)

	l = ledger("latest, OnLoss", event)
	evs, cancel = b.Subscribe(
		topic.Name[lossEvent](l.name),
		topic.Buffer[lossEvent](1),
		topic.Overflow[lossEvent](topic.DropOldest),
		lossHook[lossEvent](l),
	)
	lossConsume(l, evs, cancel, lossOriginOf)

	l = ledger("unbuffered oldest", event)
	evs, cancel = b.Subscribe(
		topic.Name[lossEvent](l.name),
		topic.Buffer[lossEvent](0),
		topic.Overflow[lossEvent](topic.DropOldest),
	)
	lossConsume(l, evs, cancel, lossOriginOf)

	l = ledger("newest, OnLoss", event)
	evs, cancel = b.Subscribe(
		topic.Name[lossEvent](l.name),
		topic.Buffer[lossEvent](2),
		lossHook[lossEvent](l),
	)
	lossConsume(l, evs, cancel, lossOriginOf)

	// A From filter, converting to an int that encodes the origin.
	const base = 1 << 24 // above any N, and P*base fits a 32-bit int
	filter := ledger("From filter", event)
	ints, cancel := b.Subscribe(
		topic.Name[int](filter.name),
		topic.Buffer[int](3),
		topic.From(func(e lossEvent) (int, bool) {
			if e.N%3 == 0 {
				filter.filtered.Add(1)
				return 0, false
			}
			return e.P*base + e.N, true
		}),
	)
	lossConsume(filter, ints, cancel, func(v int) (int, int, bool) { return v / base, v % base, true })

	// A From function of an interface source that panics on some values and
	// filters others.
	panicky := ledger("From panics, OnLoss", all)
	strs, cancel := b.Subscribe(
		topic.Name[string](panicky.name),
		topic.Buffer[string](3),
		topic.From(func(o lossOrigin) (string, bool) {
			p, n := o.Origin()
			if n%5 == 0 {
				panicky.panicked.Add(1)
				panic(n)
			}
			if n%7 == 0 {
				panicky.filtered.Add(1)
				return "", false
			}
			return fmt.Sprint(p, n), true
		}),
		lossHook[string](panicky),
	)
	lossConsume(panicky, strs, cancel, func(s string) (p, n int, ok bool) {
		_, err := fmt.Sscan(s, &p, &n)
		return p, n, err == nil
	})

	l = ledger("any", all|lossKindNoise)
	anys, cancel := b.Subscribe(topic.Name[any](l.name), topic.Buffer[any](4))
	lossConsume(l, anys, cancel, func(v any) (int, int, bool) {
		if o, ok := v.(lossOrigin); ok {
			return lossOriginOf(o)
		}
		return 0, 0, false
	})

	l = ledger("interface", all)
	origins, cancel := b.Subscribe(topic.Name[lossOrigin](l.name), topic.Buffer[lossOrigin](4))
	lossConsume(l, origins, cancel, lossOriginOf)

	l = ledger("interface oldest, OnLoss", all)
	origins, cancel = b.Subscribe(
		topic.Name[lossOrigin](l.name),
		topic.Buffer[lossOrigin](2),
		topic.Overflow[lossOrigin](topic.DropOldest),
		lossHook[lossOrigin](l),
	)
	lossConsume(l, origins, cancel, lossOriginOf)

	beatOrigin := func(v lossBeat) (int, int, bool) { return v.P, v.N, true }
	for _, c := range []int{1, 3} {
		l = ledger(fmt.Sprintf("beats %d", c), lossKindBeat)
		bs, cancel := beats.Subscribe(topic.Name[lossBeat](l.name), topic.Buffer[lossBeat](c))
		lossConsume(l, bs, cancel, beatOrigin)
	}

	var published [lossKinds]atomic.Uint64
	// Warm-up: before any consumer can have run, enough to overflow every
	// buffer, so that every subscription loses values whatever the timing.
	const warm = 10
	for i := range warm {
		b.Publish(lossEvent{P: lossPublishers, N: i})
		beats.Publish(lossBeat{P: lossPublishers, N: i})
	}
	published[0].Add(warm) // lossKindEvent
	published[3].Add(warm) // lossKindBeat

	var wg sync.WaitGroup
	for p := range lossPublishers {
		wg.Go(func() {
			var mine [lossKinds]uint64
			for i := range n {
				e := lossEvent{P: p, N: i}
				if i%4 == 3 {
					b.Publish(lossOrigin(e))
					mine[1]++
				} else {
					b.Publish(e)
					mine[0]++
				}
				if i%16 == 0 {
					b.Publish(lossNoise{N: i})
					mine[2]++
				}
				beats.Publish(lossBeat{P: p, N: i})
				mine[3]++
				// Publishers never block; yielding lets the consumers
				// they woke run before the time slice ends.
				runtime.Gosched()
			}
			for k, c := range mine {
				published[k].Add(c)
			}
		})
	}
	wg.Wait()

	// The counts, after the publishers stopped and before cancelling, which
	// removes a subscription from the snapshot.
	stats := make(map[string]topic.SubscriptionStats)
	for _, s := range slices.Concat(b.Subscriptions(), beats.Subscriptions()) {
		stats[s.Name] = s
	}
	for _, l := range ledgers {
		l.cancel()
		<-l.done
	}

	if len(stats) != len(ledgers) {
		t.Fatalf("the snapshots list %d subscriptions, want %d", len(stats), len(ledgers))
	}
	for _, l := range ledgers {
		st, ok := stats[l.name]
		if !ok {
			t.Errorf("%s: missing from the snapshot", l.name)
			continue
		}
		var matched uint64
		for k := range lossKinds {
			if l.kinds&(1<<k) != 0 {
				matched += published[k].Load()
			}
		}
		received, filtered, lost := l.received.Load(), l.filtered.Load(), st.Lost
		t.Logf("%-26s matched %6d = received %6d + filtered %5d + lost %6d (full %d, evicted %d, failed %d)",
			l.name, matched, received, filtered, lost.Total(), lost.Full, lost.Evicted, lost.Failed)
		if sum := received + filtered + lost.Total(); sum != matched {
			t.Errorf("%s: received %d + filtered %d + lost %d = %d, want the %d matched",
				l.name, received, filtered, lost.Total(), sum, matched)
		}
		if lost.Failed != l.panicked.Load() {
			t.Errorf("%s: Lost.Failed = %d, want the %d panics of its From function",
				l.name, lost.Failed, l.panicked.Load())
		}
		if (st.Policy == topic.DropNewest || st.Capacity == 0) && lost.Evicted != 0 {
			t.Errorf("%s: %v, capacity %d: Lost.Evicted = %d, want 0", l.name, st.Policy, st.Capacity, lost.Evicted)
		}
		if lost.Total() == 0 {
			t.Errorf("%s lost nothing, despite the warm-up overflowing its buffer", l.name)
		}
		if l.hooked {
			hooks := topic.Lost{Full: l.hooks[topic.Full].Load(), Evicted: l.hooks[topic.Evicted].Load(), Failed: l.hooks[topic.Failed].Load()}
			if hooks != lost || l.hooks[0].Load() != 0 {
				t.Errorf("%s: OnLoss calls by cause %+v (and %d without one), want Lost %+v",
					l.name, hooks, l.hooks[0].Load(), lost)
			}
		}
		if len(l.disorder) > 0 {
			t.Errorf("%s: received out of publication order: %v", l.name, l.disorder)
		}
	}
	if t.Failed() {
		return
	}
	if panicky.panicked.Load() == 0 || filter.filtered.Load() == 0 {
		t.Errorf("the From functions panicked %d times and filtered %d values; the test needs both",
			panicky.panicked.Load(), filter.filtered.Load())
	}
}
