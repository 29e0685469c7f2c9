package topic_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
