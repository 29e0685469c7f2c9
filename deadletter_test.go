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
