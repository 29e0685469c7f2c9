package topic_test

// Tests of dead-letter detection on pointers to records: a *Record is a
// source type like any other, and deciding whether a value is a dead letter
// (for a handler's re-drive, or its dead-lettering) must not panic on a nil
// one, on the publisher's goroutine or on the handler's.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// panicOf runs f and returns what it panicked with, if anything.
func panicOf(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// A From source whose type is a pointer to a Record: a valid source type
// (Publish accepts any type), yet Subscribe panics.
func TestAFromSourceOfAPointerToARecordSubscribes(t *testing.T) {
	var b topic.Broker
	p := panicOf(func() {
		ch, _ := b.Subscribe(topic.Buffer[int](4),
			topic.From(func(r *topic.Record[int]) (int, bool) { return r.Value, true }))
		b.Publish(&topic.Record[int]{Value: 3})
		if got := takeAll(ch); len(got) != 1 || got[0] != 3 {
			t.Errorf("received %v, want [3]", got)
		}
	})
	if p != nil {
		t.Errorf("Subscribe with From(func(*topic.Record[int]) ...) panicked: %v", p)
	}
}

// A nil *Record published where a handler's From(any) source takes it: the
// re-drive check asks whether the value is a dead letter, and panics on
// the publisher's goroutine.
func TestANilRecordPointerThroughAnyDoesNotPanicThePublisher(t *testing.T) {
	var b topic.Broker
	var handled atomic.Int64
	b.Handle(func(context.Context, valA) error { handled.Add(1); return nil },
		topic.Name[valA]("h"),
		topic.From(func(x any) (valA, bool) { return valA{}, true }))
	p := panicOf(func() { b.Publish[*topic.Record[int]](nil) })
	if p != nil {
		t.Errorf("Publish of a nil *topic.Record[int] panicked: %v", p)
	}
	_ = b.Shutdown(context.Background())
	st := hStats(t, &b, "h")
	if handled.Load()+int64(st.Lost.Total()) != 1 {
		t.Errorf("handled %d, lost %+v; want one value handled or counted", handled.Load(), st.Lost)
	}
}

// An at-least-once handler of *Record[int] that fails on a nil value:
// deciding whether to dead-letter it panics on the worker, outside f, and
// the panic is not recovered: the process dies. Run in a child process.
func TestANilRecordPointerFailingItsAttemptsDoesNotKillTheProcess(t *testing.T) {
	if os.Getenv("TOPIC_NILRECORD_CHILD") == "1" {
		var b topic.Broker
		dl, _ := b.Subscribe(topic.Buffer[topic.DeadLetter[*topic.Record[int]]](4))
		b.Handle(func(context.Context, *topic.Record[int]) error { return errors.New("no") },
			topic.Retry[*topic.Record[int]](topic.RetryPolicy{Attempts: 1}))
		b.Publish[*topic.Record[int]](nil)
		if err := b.Shutdown(context.Background()); err != nil {
			fmt.Println("Shutdown:", err)
		}
		fmt.Println("dead letters:", len(takeAll(dl)))
		return
	}
	out, err := runSelf([]string{"TOPIC_NILRECORD_CHILD=1"}, "-test.run=^TestANilRecordPointerFailingItsAttemptsDoesNotKillTheProcess$", "-test.count=1")
	if err != nil {
		lines := strings.Split(string(out), "\n")
		t.Errorf("the child process died (%v):\n%s", err, strings.Join(lines[:min(len(lines), 12)], "\n"))
	}
}

// The documented way to keep every dead letter: DeadLetter[T] retained and
// followed by a channel (a follower waits for its reader, where a plain
// channel subscription drops what does not fit). A burst of 10,000 values,
// each given up on at once, reaches the follower whole, in order, with no
// loss counted anywhere; the bound is the retention, and the handler's own
// queue.
func TestEveryDeadLetterOfABurstReachesAFollowerOfTheRetainedType(t *testing.T) {
	const n = 10_000
	var b topic.Broker
	b.Retain[topic.DeadLetter[valA]](topic.Retention{Count: n})
	dead, cancel := b.Subscribe(topic.Follow[topic.DeadLetter[valA]](), topic.Name[topic.DeadLetter[valA]]("dead"))
	defer cancel()
	b.Handle(func(context.Context, valA) error { return topic.Permanent(errors.New("declined")) },
		topic.Name[valA]("h"), topic.Buffer[valA](n),
		topic.Retry[valA](topic.RetryPolicy{Attempts: 5}))

	received := make(chan []int)
	go func() {
		var got []int
		for d := range dead {
			got = append(got, d.Value.N)
			if len(got) == n {
				break
			}
		}
		received <- got
	}()
	for i := range n {
		b.Publish(valA{N: i})
	}
	got := <-received
	for i, v := range got {
		if v != i {
			t.Fatalf("dead letter %d is of value %d; want %d", i, v, i)
		}
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"h", "dead"} {
		if st := hStats(t, &b, name); st.Lost.Total() != 0 {
			t.Errorf("%s lost %+v; want nothing", name, st.Lost)
		}
	}
	if st := hStats(t, &b, "h"); st.Handler.DeadLettered != n {
		t.Errorf("handler dead-lettered %d; want %d", st.Handler.DeadLettered, n)
	}
}
