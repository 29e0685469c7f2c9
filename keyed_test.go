package topic_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

// kPrice is the value of the compacted logs: the price of a SKU.
type kPrice struct {
	SKU   string
	Cents int
}

func kSKU(p kPrice) string { return p.SKU }

func kShow(recs []topic.Record[kPrice]) []string {
	var s []string
	for _, r := range recs {
		s = append(s, fmt.Sprintf("%s=%d@%d", r.Value.SKU, r.Value.Cents, r.Offset))
	}
	return s
}

// A log of the latest value per key gives a late subscriber the current
// state: the last price of every SKU, in the order of their offsets, by
// replay, by a follower and by Read; live publications are delivered as
// usual.
func TestALatestPerKeyLogKeepsTheCurrentValueOfEachKey(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	b.RetainLatest(kSKU, topic.Retention{Count: 100})
	live, cancel := b.Subscribe(topic.Buffer[kPrice](16))
	defer cancel()
	for _, p := range []kPrice{{"a", 1}, {"b", 2}, {"a", 3}, {"c", 4}, {"b", 5}} {
		b.Publish(p)
	}
	if got := len(takeAll(live)); got != 5 {
		t.Errorf("the live subscription received %d of 5", got)
	}
	want := []string{"a=3@2", "c=4@3", "b=5@4"}

	recs, next, skipped := b.Read[kPrice](0, 10)
	if got := kShow(recs); !slices.Equal(got, want) || next != 5 || skipped != 0 {
		t.Errorf("Read: %v next %d skipped %d; want %v, 5, 0", got, next, skipped, want)
	}
	ch, cancelReplay := b.Subscribe(topic.Buffer[topic.Record[kPrice]](8), topic.Replay[topic.Record[kPrice]](topic.Earliest()))
	defer cancelReplay()
	if got := kShow(takeAll(ch)); !slices.Equal(got, want) {
		t.Errorf("Replay(Earliest): %v, want %v", got, want)
	}
	last, cancelLast := b.Subscribe(topic.Buffer[topic.Record[kPrice]](8), topic.Replay[topic.Record[kPrice]](topic.Last(2)))
	defer cancelLast()
	if got := kShow(takeAll(last)); !slices.Equal(got, want[1:]) {
		t.Errorf("Replay(Last(2)): %v, want %v", got, want[1:])
	}
	f := b.Follow(topic.Replay[kPrice](topic.Earliest()))
	defer f.Close()
	buf := make([]topic.Record[kPrice], 2)
	var got []topic.Record[kPrice]
	for n := f.Read(buf); n > 0; n = f.Read(buf) {
		got = append(got, buf[:n]...)
	}
	if !slices.Equal(kShow(got), want) || f.Offset() != 5 {
		t.Errorf("a follower read %v up to %d, want %v up to 5", kShow(got), f.Offset(), want)
	}
}

// A follower behind a compacted log reads the current value of each key it
// has not read, not the values replaced meanwhile, and counts nothing as
// skipped: the log keeps state, not history.
func TestAFollowerOfALatestPerKeyLogReadsTheCurrentValues(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	b.RetainLatest(kSKU, topic.Retention{Count: 100})
	f := b.Follow(topic.Replay[kPrice](topic.Earliest()), topic.Name[kPrice]("f"))
	defer f.Close()
	b.Publish(kPrice{"a", 1})
	buf := make([]topic.Record[kPrice], 10)
	if n := f.Read(buf); n != 1 {
		t.Fatalf("read %d", n)
	}
	for cents := 2; cents <= 50; cents++ {
		b.Publish(kPrice{"a", cents})
		b.Publish(kPrice{"b", cents})
	}
	n := f.Read(buf)
	if got := kShow(buf[:n]); !slices.Equal(got, []string{"a=50@97", "b=50@98"}) {
		t.Errorf("read %v, want the last a and b", got)
	}
	if st := b.Subscriptions()[0]; st.Lost.Total() != 0 || st.Follower.Offset != 99 {
		t.Errorf("lost %+v at %d, want nothing lost at 99", st.Lost, st.Follower.Offset)
	}
}

// Count bounds the keys: a new key beyond it drops the key whose latest
// value is the oldest; Age drops old values.
func TestALatestPerKeyLogIsBoundedByKeysAndAge(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.RetainLatest(kSKU, topic.Retention{Count: 2, Age: time.Minute})
		b.Publish(kPrice{"a", 1})
		b.Publish(kPrice{"b", 2})
		b.Publish(kPrice{"a", 3}) // a is now the newest
		b.Publish(kPrice{"c", 4}) // three keys: b, the oldest, goes
		recs, _, _ := b.Read[kPrice](0, 10)
		if got := kShow(recs); !slices.Equal(got, []string{"a=3@2", "c=4@3"}) {
			t.Errorf("after a third key: %v, want a and c", got)
		}
		time.Sleep(30 * time.Second)
		b.Publish(kPrice{"d", 5}) // a goes: the oldest
		time.Sleep(45 * time.Second)
		recs, next, _ := b.Read[kPrice](0, 10)
		if got := kShow(recs); !slices.Equal(got, []string{"d=5@4"}) || next != 5 {
			t.Errorf("after 75s: %v next %d, want only d, younger than a minute", got, next)
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// Bad input: a nil key function; declaring the type again another way.
func TestRetainLatestBadInput(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	wantPanic := func(what string, f func()) {
		t.Helper()
		msg, panicked := panicMessage(f)
		if !panicked || !strings.HasPrefix(msg, "topic: ") {
			t.Errorf("%s: panicked %v with %q, want a topic: panic", what, panicked, msg)
		}
	}
	wantPanic("a nil key", func() { b.RetainLatest[kPrice, string](nil, topic.Retention{Count: 1}) })
	wantPanic("Count 0", func() { b.RetainLatest(kSKU, topic.Retention{}) })
	b.RetainLatest(kSKU, topic.Retention{Count: 4})
	b.RetainLatest(kSKU, topic.Retention{Count: 4}) // the same again: nothing
	wantPanic("Retain of a type kept per key", func() { b.Retain[kPrice](topic.Retention{Count: 4}) })
	wantPanic("another bound", func() { b.RetainLatest(kSKU, topic.Retention{Count: 5}) })
}

// TestALatestPerKeyLogsKeyFunctionMayPanic: a key function that panics
// panics the Publish that called it, before the value gets an offset, and
// leaves the log as it was: the next publication, a replay, a Read and a
// follower all go on (the function ran with no lock held).
func TestALatestPerKeyLogsKeyFunctionMayPanic(t *testing.T) {
	var b topic.Broker
	b.RetainLatest(func(p kPrice) string {
		if p.SKU == "" {
			panic("no SKU")
		}
		return p.SKU
	}, topic.Retention{Count: 8})
	b.Publish(kPrice{"a", 1})
	func() {
		defer func() {
			if r := recover(); r != "no SKU" {
				t.Fatalf("recovered %v, want the key function's panic", r)
			}
		}()
		b.Publish(kPrice{"", 2})
	}()
	done := make(chan []string)
	go func() {
		b.Publish(kPrice{"b", 3})
		recs, next, _ := b.Read[kPrice](0, 10)
		f := b.Follow(topic.Replay[kPrice](topic.Earliest()))
		defer f.Close()
		buf := make([]topic.Record[kPrice], 10)
		n := f.Read(buf)
		done <- append(kShow(recs), fmt.Sprint(next), fmt.Sprint(kShow(buf[:n])))
	}()
	select {
	case got := <-done:
		want := []string{"a=1@0", "b=3@1", "2", "[a=1@0 b=3@1]"}
		if !slices.Equal(got, want) {
			t.Fatalf("after the panic: %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the log stayed locked after its key function panicked")
	}
}

// TestALatestPerKeyLogsKeyFunctionMayPublish: a key function that publishes
// a value of the same type does not deadlock: the inner publication gets its
// offset first, since the outer one has not taken the sequencing point yet.
func TestALatestPerKeyLogsKeyFunctionMayPublish(t *testing.T) {
	var b topic.Broker
	b.RetainLatest(func(p kPrice) string {
		if p.SKU == "bundle" {
			b.Publish(kPrice{"part", p.Cents / 2})
		}
		return p.SKU
	}, topic.Retention{Count: 8})
	done := make(chan []string)
	go func() {
		b.Publish(kPrice{"bundle", 10})
		recs, _, _ := b.Read[kPrice](0, 10)
		done <- kShow(recs)
	}()
	select {
	case got := <-done:
		if want := []string{"part=5@0", "bundle=10@1"}; !slices.Equal(got, want) {
			t.Fatalf("kept %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a key function that publishes deadlocked its log")
	}
}

type kEntry struct {
	K string
	V int
}

func kEntryKey(v kEntry) string { return v.K }

func kShowEntries(recs []topic.Record[kEntry]) []string {
	var s []string
	for _, r := range recs {
		s = append(s, fmt.Sprintf("%s=%d@%d", r.Value.K, r.Value.V, r.Offset))
	}
	return s
}

func kReadAll(f *topic.Follower[kEntry]) []topic.Record[kEntry] {
	var all []topic.Record[kEntry]
	buf := make([]topic.Record[kEntry], 4)
	for {
		n := f.Read(buf)
		if n == 0 {
			return all
		}
		all = append(all, buf[:n]...)
	}
}

// A follower of a compacted log that starts at its earliest must read the
// current value of every key, like a replay does, however many
// publications there were: Count bounds keys, not values.
func TestFollowKeyedFromTheEarliestReadsEveryKey(t *testing.T) {
	var b topic.Broker
	b.RetainLatest(kEntryKey, topic.Retention{Count: 10})
	b.Publish(kEntry{"c", 0})
	for i := 1; i <= 50; i++ {
		b.Publish(kEntry{"a", i})
		b.Publish(kEntry{"b", i})
	}
	want := []string{"c=0@0", "a=50@99", "b=50@100"}
	recs, _, _ := b.Read[kEntry](0, 10)
	if got := kShowEntries(recs); !slices.Equal(got, want) {
		t.Fatalf("Read: %v, want %v", got, want)
	}
	rep, cancel := b.Subscribe(topic.Buffer[topic.Record[kEntry]](8), topic.Replay[topic.Record[kEntry]](topic.Earliest()))
	defer cancel()
	if got := kShowEntries(takeAll(rep)); !slices.Equal(got, want) {
		t.Errorf("Replay(Earliest): %v, want %v", got, want)
	}
	f := b.Follow(topic.Replay[kEntry](topic.Earliest()))
	defer f.Close()
	if got := kShowEntries(kReadAll(f)); !slices.Equal(got, want) {
		t.Errorf("Follow(Earliest): %v, want %v", got, want)
	}
	last := b.Follow(topic.Replay[kEntry](topic.Last(3)))
	defer last.Close()
	if got := kShowEntries(kReadAll(last)); !slices.Equal(got, want) {
		t.Errorf("Follow(Last(3)): %v, want %v", got, want)
	}
	at := b.Follow(topic.Replay[kEntry](topic.At(0)))
	defer at.Close()
	if got := kShowEntries(kReadAll(at)); !slices.Equal(got, want) {
		t.Errorf("Follow(At(0)): %v, want %v", got, want)
	}
}

// A keyed log's follower with concurrent publishers: each record read is
// the value published at its offset, and the final state a follower ends
// with is the current state.
func TestFollowKeyedUnderConcurrentPublishersReadsWhatWasPublished(t *testing.T) {
	var b topic.Broker
	b.RetainLatest(kEntryKey, topic.Retention{Count: 8})
	var published sync.Map
	f := b.Follow(topic.Replay[kEntry](topic.Earliest()))
	state := map[string]topic.Record[kEntry]{}
	var readRecs []topic.Record[kEntry]
	done := make(chan struct{})
	var readErr error
	go func() {
		defer close(done)
		buf := make([]topic.Record[kEntry], 3)
		prev := int64(-1)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			err := f.Wait(ctx)
			cancel()
			if err != nil {
				return
			}
			n := f.Read(buf)
			for _, r := range buf[:n] {
				if int64(r.Offset) <= prev {
					readErr = fmt.Errorf("offset %d after %d", r.Offset, prev)
				}
				prev = int64(r.Offset)
				readRecs = append(readRecs, r)
				state[r.Value.K] = r
			}
		}
	}()
	var pw sync.WaitGroup
	for p := range 4 {
		pw.Go(func() {
			for n := range 3000 {
				v := kEntry{fmt.Sprint("k", (n*7+p)%6), p*10000 + n}
				off, _ := b.Append(v)
				published.Store(off, v)
			}
		})
	}
	pw.Wait()
	<-done
	if readErr != nil {
		t.Error(readErr)
	}
	for _, r := range readRecs {
		v, _ := published.Load(r.Offset)
		if v == nil || v.(kEntry) != r.Value {
			t.Errorf("offset %d holds %v, published %v", r.Offset, r.Value, v)
			break
		}
	}
	recs, _, _ := b.Read[kEntry](0, 100)
	if len(recs) != 6 {
		t.Errorf("%d keys kept, want 6", len(recs))
	}
	for _, r := range recs {
		if state[r.Value.K] != r {
			t.Errorf("follower ended with %v for %s, log has %v", state[r.Value.K], r.Value.K, r)
		}
	}
	f.Close()
}

// A model of a compacted log: random keys, a key bound and an age; Read,
// a replay and a fresh follower from the earliest all give the model's
// state.
func TestFollowKeyedMatchesTheModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for seed := range 20 {
			var b topic.Broker
			count := 1 + seed%5
			age := time.Duration(0)
			if seed%2 == 1 {
				age = 10 * time.Second
			}
			b.RetainLatest(kEntryKey, topic.Retention{Count: count, Age: age})
			type item struct {
				off uint64
				at  time.Time
				v   kEntry
			}
			var model []item // in offset order, one per key
			off := uint64(0)
			x := uint64(seed*7919 + 1)
			rnd := func(n int) int { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return int(x % uint64(n)) }
			for step := range 400 {
				if rnd(10) == 0 {
					time.Sleep(time.Duration(rnd(4)) * time.Second)
				}
				v := kEntry{fmt.Sprint("k", rnd(8)), step}
				b.Publish(v)
				now := time.Now()
				model = slices.DeleteFunc(model, func(it item) bool { return it.v.K == v.K })
				model = append(model, item{off, now, v})
				off++
				if len(model) > count {
					model = model[len(model)-count:]
				}
				if age > 0 {
					model = slices.DeleteFunc(model, func(it item) bool { return now.Sub(it.at) > age })
				}
				if step%37 != 0 {
					continue
				}
				now = time.Now()
				var want []string
				for _, it := range model {
					if age == 0 || now.Sub(it.at) <= age {
						want = append(want, fmt.Sprintf("%s=%d@%d", it.v.K, it.v.V, it.off))
					}
				}
				recs, _, _ := b.Read[kEntry](0, 100)
				if got := kShowEntries(recs); !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d Read: %v, want %v", seed, step, got, want)
				}
				rep, cancel := b.Subscribe(topic.Buffer[topic.Record[kEntry]](100), topic.Replay[topic.Record[kEntry]](topic.Earliest()))
				if got := kShowEntries(takeAll(rep)); !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d Replay: %v, want %v", seed, step, got, want)
				}
				cancel()
			}
			b.Shutdown(context.Background())
		}
	})
}

// kPair is the value of TestFollowKeyedLagCountsTheValuesKept.
type kPair struct {
	K string
	V int
}

func kPairKey(v kPair) string { return v.K }

// FollowerStats.Lag is "the values kept from its offset on". On a
// RetainLatest log one key's value replaces the one before: five
// publications of one key keep one value.
func TestFollowKeyedLagCountsTheValuesKept(t *testing.T) {
	var b topic.Broker
	b.RetainLatest(kPairKey, topic.Retention{Count: 10})
	f := b.Follow(topic.Replay[kPair](topic.Earliest()))
	defer f.Close()
	for n := range 5 {
		b.Publish(kPair{"a", n})
	}
	st := b.Subscriptions()
	if len(st) != 1 || st[0].Follower == nil {
		t.Fatalf("subscriptions %+v", st)
	}
	recs := readAllOf(f, 10)
	if len(recs) != 1 {
		t.Fatalf("read %d records, want 1 (the log keeps one)", len(recs))
	}
	if st[0].Follower.Lag != 1 || st[0].Queued != 1 {
		t.Errorf("Lag %d, Queued %d before reading; the log keeps %d value from the follower's offset on",
			st[0].Follower.Lag, st[0].Queued, len(recs))
	}
}
