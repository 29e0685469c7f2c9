package topic_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

// calls collects what TimeCalls reports.
type calls = collector[topic.Call]

// TimeCalls reports every call of every handler's function: its type and
// name, the attempt, how long it ran, what it returned, a panic as a
// *PanicError; of handlers made before it and after.
func TestTimeCallsReportsEveryCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		boom := errors.New("boom")
		b.Handle(func(_ context.Context, v int) error {
			time.Sleep(time.Duration(v) * time.Millisecond)
			switch v {
			case 2:
				return boom
			case 3:
				panic("three")
			}
			return nil
		}, topic.Name[int]("ints"))
		var c calls
		stop := b.TimeCalls(c.add)
		b.Handle(func(ctx context.Context, s string) error {
			time.Sleep(time.Duration(topic.Attempt(ctx)) * time.Millisecond)
			return boom
		}, topic.Name[string]("retried"), topic.Retry[string](topic.RetryPolicy{Attempts: 3}))
		for v := 1; v <= 3; v++ {
			b.Publish(v)
			synctest.Wait()
		}
		b.Publish("retry")
		if err := b.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := c.take()
		type call struct {
			typ, name string
			attempt   int
			d         time.Duration
			err       string
		}
		var short []call
		for _, x := range got {
			e := ""
			var pe *topic.PanicError
			switch {
			case errors.As(x.Err, &pe):
				e = "panic " + pe.Value.(string)
			case x.Err != nil:
				e = x.Err.Error()
			}
			short = append(short, call{x.Type.String(), x.Name, x.Attempt, x.Duration, e})
		}
		want := []call{
			{"int", "ints", 1, time.Millisecond, ""},
			{"int", "ints", 1, 2 * time.Millisecond, "boom"},
			{"int", "ints", 1, 3 * time.Millisecond, "panic three"},
			{"string", "retried", 1, time.Millisecond, "boom"},
			{"string", "retried", 2, 2 * time.Millisecond, "boom"},
			{"string", "retried", 3, 3 * time.Millisecond, "boom"},
		}
		// The two handlers run at once: each one's calls are in order.
		slices.SortStableFunc(short, func(x, y call) int { return strings.Compare(x.typ, y.typ) })
		if !slices.Equal(short, want) {
			t.Errorf("TimeCalls reported\n%+v\nwant\n%+v", short, want)
		}
		stop()
		stop()
		b.Publish(1)
		b.Settle(context.Background())
		if got := c.take(); len(got) != 0 {
			t.Errorf("after stop, TimeCalls reported %+v", got)
		}
	})
}

// Two TimeCalls are both told; a function that panics is ignored, and
// the handler goes on.
func TestTimeCallsFunctionsAreIndependent(t *testing.T) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	var c calls
	stopPanic := b.TimeCalls(func(topic.Call) { panic("a broken timer") })
	defer stopPanic()
	stop := b.TimeCalls(c.add)
	defer stop()
	var handled sync.WaitGroup
	handled.Add(2)
	b.Handle(func(context.Context, int) error { handled.Done(); return nil })
	b.Publish(1)
	b.Publish(2)
	handled.Wait()
	if err := b.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := c.take()
	if len(got) != 2 || got[0].Type != reflect.TypeFor[int]() || got[0].Err != nil || got[1].Attempt != 1 {
		t.Errorf("TimeCalls reported %+v, want two successful calls of an int handler", got)
	}
}

func TestTimeCallsOfNilPanics(t *testing.T) {
	var b topic.Broker
	defer func() {
		if p, _ := recover().(string); !strings.HasPrefix(p, "topic: ") {
			t.Errorf("TimeCalls(nil) panicked with %v, want a topic: message", p)
		}
	}()
	b.TimeCalls(nil)
}
