package topic_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// What a subscription matched is what it was sent, what its From functions
// rejected, and what it lost before a send, whatever the path: a plain
// channel, a full one, an interface, From filters and transformations, a
// drop-oldest policy, an OnLoss function, a cancel. And every publication
// that found a subscription counts once for its type.
func TestMatchedIsSentRejectedAndLost(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	plain, c1 := b.Subscribe(topic.Name[int]("plain"), topic.Buffer[int](1000))
	defer c1()
	_, c2 := b.Subscribe(topic.Name[int]("full"), topic.Buffer[int](3))
	defer c2()
	_, c3 := b.Subscribe(topic.Name[fmt.Stringer]("iface"), topic.Buffer[fmt.Stringer](4))
	defer c3()
	_, c4 := b.Subscribe(topic.Name[string]("even"), topic.Buffer[string](1000),
		topic.From(func(n int) (string, bool) { return fmt.Sprint(n), n%2 == 0 }))
	defer c4()
	_, c5 := b.Subscribe(topic.Name[int]("oldest"), topic.Buffer[int](2), topic.Overflow[int](topic.DropOldest))
	defer c5()
	var onLoss int
	_, c6 := b.Subscribe(topic.Name[int]("onloss"), topic.Buffer[int](5),
		topic.OnLoss(func(topic.Loss[int]) { onLoss++ }))
	defer c6()
	_, c7 := b.Subscribe(topic.Name[any]("any"), topic.Buffer[any](1000))
	defer c7()

	const n = 100
	for i := range n {
		b.Publish(i)
		b.Publish(stringer(i))
	}
	for range 10 {
		<-plain
	}
	got := map[string]topic.SubscriptionStats{}
	for _, st := range b.Subscriptions() {
		got[st.Name] = st
	}
	want := map[string]struct{ sent, rejected, matched, queued uint64 }{
		"plain":  {n, 0, n, n - 10},
		"full":   {3, 0, n, 3},
		"iface":  {4, 0, n, 4},
		"even":   {n / 2, n / 2, n, n / 2},
		"oldest": {n, 0, n, 2}, // every value sent, n-2 evicted
		"onloss": {5, 0, n, 5},
		"any":    {2 * n, 0, 2 * n, 2 * n}, // ints and stringers
	}
	for name, w := range want {
		st := got[name]
		if st.Sent != w.sent || st.Rejected != w.rejected || st.Matched != w.matched || uint64(st.Queued) != w.queued {
			t.Errorf("%s: sent %d, rejected %d, matched %d, queued %d; want %d, %d, %d, %d (lost %+v)",
				name, st.Sent, st.Rejected, st.Matched, st.Queued, w.sent, w.rejected, w.matched, w.queued, st.Lost)
		}
		// Received, queued, rejected and lost make what was matched.
		received := st.Sent - uint64(st.Queued) - st.Lost.Evicted
		if received+uint64(st.Queued)+st.Rejected+st.Lost.Total() != st.Matched {
			t.Errorf("%s: received %d + queued %d + rejected %d + lost %d != matched %d",
				name, received, st.Queued, st.Rejected, st.Lost.Total(), st.Matched)
		}
	}
	if onLoss != n-5 {
		t.Errorf("OnLoss called %d times, want %d", onLoss, n-5)
	}
	if r := got["full"].LossRatio(); r != float64(n-3)/n {
		t.Errorf("LossRatio of full = %v, want %v", r, float64(n-3)/n)
	}
	// string is routed (a From source's subscription) and never published.
	if got, want := published(b.Topics()), fmt.Sprintf("int %d, string 0, topic_test.stringer %d", n, n); got != want {
		t.Errorf("Topics() = %s, want %s", got, want)
	}
}

// A handler's queue is sent to: what it was sent is what it handled,
// errored on, dead-lettered or discarded, once it has settled.
func TestAHandlerWasSentWhatItHandledOrLost(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	release := make(chan struct{})
	fail := func(_ context.Context, v int) error {
		<-release
		if v%3 == 0 {
			return topic.Permanent(errors.New("no"))
		}
		return nil
	}
	b.Handle(fail, topic.Name[int]("once"), topic.Buffer[int](10))
	b.Handle(fail, topic.Name[int]("retry"), topic.Buffer[int](20), topic.Retry[int](topic.RetryPolicy{Attempts: 2}))
	const n = 100
	for i := range n {
		b.Publish(i)
	}
	close(release)
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, st := range b.Subscriptions() {
		h := st.Handler
		if st.Matched != n || st.Sent+st.Lost.Full != n {
			t.Errorf("%s: matched %d, sent %d, full %d; want %d matched, sent and full", st.Name, st.Matched, st.Sent, st.Lost.Full, n)
		}
		if done := h.Handled + h.DeadLettered + st.Lost.Errored + st.Lost.Discarded; done != st.Sent || h.Accepted != st.Sent {
			t.Errorf("%s: sent %d, accepted %d; handled %d + dead-lettered %d + errored %d + discarded %d = %d",
				st.Name, st.Sent, h.Accepted, h.Handled, h.DeadLettered, st.Lost.Errored, st.Lost.Discarded, done)
		}
	}
}

// A follower read by Read was sent what it read; what retention trimmed
// before it read is Skipped: the two make what it matched.
func TestAFollowerWasSentWhatItRead(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	b.Retain[int](topic.Retention{Count: 10})
	f := b.Follow(topic.Name[int]("pull"))
	defer f.Close()
	ch, cancel := b.Subscribe(topic.Name[int]("channel"), topic.Follow[int](), topic.Buffer[int](4))
	defer cancel()
	const n = 30
	for i := range 5 {
		b.Publish(i)
	}
	buf := make([]topic.Record[int], 3)
	if k := f.Read(buf); k != 3 {
		t.Fatalf("Read = %d, want 3", k)
	}
	for i := 5; i < n; i++ {
		b.Publish(i)
	}
	got := 0
	for range ch {
		if got++; got == 4 {
			break
		}
	}
	for f.Read(buf) > 0 {
	}
	byName := map[string]topic.SubscriptionStats{}
	for _, st := range b.Subscriptions() {
		byName[st.Name] = st
	}
	pull := byName["pull"]
	// It read 3, then retention skipped offsets 3 to 19, and it read the 10 kept.
	if pull.Sent != 13 || pull.Lost.Skipped != 17 || pull.Matched != n {
		t.Errorf("pull: sent %d, skipped %d, matched %d; want 13, 17, %d", pull.Sent, pull.Lost.Skipped, pull.Matched, n)
	}
	channel := byName["channel"]
	if channel.Sent < 4 || channel.Matched != channel.Sent+channel.Lost.Skipped {
		t.Errorf("channel: sent %d, skipped %d, matched %d; want at least 4 sent, matched their sum",
			channel.Sent, channel.Lost.Skipped, channel.Matched)
	}
	if tp := b.Topics(); len(tp) != 1 || tp[0].Published != n || !tp[0].Retained {
		t.Errorf("Topics() = %v, want int published %d, retained", tp, n)
	}
}

// Publishers in parallel, publishing from inside From functions too, lose
// no count: every publication is counted once for its type, and each
// subscription's matched count is the publications it matched.
func TestCountsHoldUnderParallelPublishers(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	_, c1 := b.Subscribe(topic.Name[int]("small"), topic.Buffer[int](8))
	defer c1()
	_, c2 := b.Subscribe(topic.Name[any]("any"), topic.Buffer[any](64))
	defer c2()
	_, c3 := b.Subscribe(topic.Name[string]("nested"), topic.Buffer[string](8),
		topic.From(func(n int) (string, bool) {
			if n%2 == 0 {
				b.Publish(uint(n)) // a publication inside this one's
			}
			return "", n%4 == 0
		}))
	defer c3()
	_, c4 := b.Subscribe(topic.Name[uint]("uints"), topic.Buffer[uint](8))
	defer c4()
	const goroutines, each = 8, 5000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for i := range each {
				b.Publish(i)
			}
		})
	}
	wg.Wait()
	const n = goroutines * each
	for _, st := range b.Subscriptions() {
		want := uint64(n)
		if st.Name == "any" {
			want += n / 2 // the uints
		}
		if st.Name == "uints" {
			want = n / 2
		}
		if st.Matched != want {
			t.Errorf("%s: matched %d (sent %d, rejected %d, lost %+v), want %d", st.Name, st.Matched, st.Sent, st.Rejected, st.Lost, want)
		}
	}
	if got, want := published(b.Topics()), fmt.Sprintf("int %d, string 0, uint %d", n, n/2); got != want {
		t.Errorf("Topics() = %s, want %s", got, want)
	}
}

// A publisher whose stripe's slot of the guard is held (here by itself)
// counts into the guard's sets: no count is lost either.
func TestCountsHoldInAHeldStripe(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	_, c1 := b.Subscribe(topic.Name[int]("ints"), topic.Buffer[int](8))
	defer c1()
	_, c2 := b.Subscribe(topic.Name[any]("any"), topic.Buffer[any](8))
	defer c2()
	exit := b.EnterGuard()
	for i := range 10 {
		b.Publish(i)
	}
	exit()
	for _, st := range b.Subscriptions() {
		if st.Sent != 8 || st.Lost.Full != 2 || st.Matched != 10 {
			t.Errorf("%s: sent %d, full %d, matched %d; want 8, 2, 10", st.Name, st.Sent, st.Lost.Full, st.Matched)
		}
	}
	if tp := b.Topics(); len(tp) != 1 || tp[0].Published != 10 {
		t.Errorf("Topics() = %v, want int published 10", tp)
	}
}

// After Shutdown every publication still counts for its type, and as
// Closed for what it matched.
func TestPublicationsAfterShutdownAreCounted(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	_, cancel := b.Subscribe(topic.Name[int]("ints"), topic.Buffer[int](4))
	defer cancel()
	b.Publish(1)
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.Publish(2)
	b.Publish(3)
	st := b.Subscriptions()[0]
	if st.Sent != 1 || st.Lost.Closed != 2 || st.Matched != 3 {
		t.Errorf("sent %d, closed %d, matched %d; want 1, 2, 3", st.Sent, st.Lost.Closed, st.Matched)
	}
	if tp := b.Topics(); len(tp) != 1 || tp[0].Published != 3 {
		t.Errorf("Topics() = %v, want int published 3", tp)
	}
}

// published prints the types of topics with their counts.
func published(topics []topic.TopicStats) string {
	var s []string
	for _, tp := range topics {
		s = append(s, fmt.Sprint(tp.Type, " ", tp.Published))
	}
	return strings.Join(s, ", ")
}

// Topics says which subscriptions each type reaches, and through which of
// their sources: their own type, an interface, a From function.
func TestTopicsSayWhoConsumesWhat(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	_, c1 := b.Subscribe(topic.Name[int]("ints"))
	defer c1()
	_, c2 := b.Subscribe(topic.Name[fmt.Stringer]("stringers"))
	defer c2()
	_, c3 := b.Subscribe(topic.Name[string]("texts"), topic.From(func(s stringer) (string, bool) { return s.String(), true }))
	defer c3()
	_, c4 := b.Subscribe(topic.Name[any]("all"))
	defer c4()
	b.Publish(stringer(1)) // routes stringer
	b.Publish[fmt.Stringer](stringer(2))
	var got []string
	for _, tp := range b.Topics() {
		for _, r := range tp.Reaches {
			if !strings.HasPrefix(r.Made, "github.com/seedaa7df82c/topic_test/count_test.go:") {
				t.Errorf("%s reaches %s %q made at %q", tp.Type, r.Type, r.Name, r.Made)
			}
			got = append(got, fmt.Sprintf("%s -> %s via %s from=%v", tp.Type, r.Name, r.Via, r.From))
		}
	}
	want := []string{
		"fmt.Stringer -> stringers via fmt.Stringer from=false",
		"fmt.Stringer -> all via interface {} from=false",
		"int -> ints via int from=false",
		"int -> all via interface {} from=false",
		"string -> all via interface {} from=false",
		"string -> texts via string from=false",
		"topic_test.stringer -> stringers via fmt.Stringer from=false",
		"topic_test.stringer -> all via interface {} from=false",
		"topic_test.stringer -> texts via topic_test.stringer from=true",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Topics reaches:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	cancelAll := []func(){c1, c2, c3, c4}
	for _, c := range cancelAll {
		c()
	}
	for _, tp := range b.Topics() {
		if len(tp.Reaches) != 0 {
			t.Errorf("after every cancel, %s reaches %v", tp.Type, tp.Reaches)
		}
	}
}

// Publishers dropping on a lone full subscription while Shutdown closes
// it: every publication counts for its type, as it does for the
// subscription (Full, or Closed once closed), however long the close takes.
func TestPublishedHoldsWhenShutdownRacesDrops(t *testing.T) {
	t.Parallel()
	for trial := range 20 {
		var b topic.Broker
		_, cancel := b.Subscribe(topic.Name[int]("lone"), topic.Buffer[int](1))
		b.Publish(0)
		var stop atomic.Bool
		var made atomic.Uint64
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for !stop.Load() {
					b.Publish(1)
					made.Add(1)
				}
			})
		}
		runtime.Gosched()
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		stop.Store(true)
		wg.Wait()
		st := b.Subscriptions()[0]
		tp := b.Topics()[0]
		if n := made.Load() + 1; st.Matched != n || tp.Published != n {
			t.Fatalf("trial %d: %d published, the subscription matched %d, Topics counts %d", trial, n, st.Matched, tp.Published)
		}
		cancel()
	}
}

// A cancelled subscription's drops stay counted for its type.
func TestPublishedKeepsTheDropsOfACancelledSubscription(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	_, cancel := b.Subscribe[int](topic.Buffer[int](1))
	for i := range 6 {
		b.Publish(i) // 1 sent, 5 dropped
	}
	cancel()
	b.Publish(6) // nobody subscribes: not counted
	if got := published(b.Topics()); got != "int 6" {
		t.Errorf("Topics() = %s, want int 6", got)
	}
}

// Records published by hand and all dropped count for Record[T], as the
// records a log sends do for T.
func TestRecordsPublishedAndDroppedAreCounted(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	b.Retain[int](topic.Retention{Count: 8})
	recs, cancel := b.Subscribe(topic.Buffer[topic.Record[int]](1))
	defer cancel()
	b.Publish(1) // the log's record fills the buffer
	for range 5 {
		b.Publish(topic.Record[int]{Value: 2})
	}
	if got, want := published(b.Topics()), "int 1, topic.Record[int] 5"; got != want {
		t.Errorf("Topics() = %s, want %s", got, want)
	}
	<-recs
}

type stringer int

func (s stringer) String() string { return fmt.Sprint(int(s)) }
