package topic_test

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/seedaa7df82c/topic"
)

// A route whose only source is a From function is called straight from
// Publish: its panics are counted as for any source, and the publisher
// carries on.
func TestTheOnlySourceOfARoutePanicking(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	var log lossLog[string]
	ch, cancel := b.Subscribe(
		topic.Name[string]("only"),
		topic.Buffer[string](4),
		topic.From(func(t lossTick) (string, bool) {
			if t.N == 2 {
				panic("two")
			}
			return fmt.Sprint(t.N), t.N != 3
		}),
		topic.OnLoss(log.hook),
	)
	defer cancel()
	if msg, panicked := panicMessage(func() {
		for i := 1; i <= 4; i++ {
			b.Publish(lossTick{i})
		}
	}); panicked {
		t.Fatalf("Publish panicked with %q", msg)
	}
	wantReceived(t, "only", ch, "1", "4")
	wantLost(t, &b, "only", topic.Lost{Failed: 1})
	wantLosses(t, "only", &log, topic.Loss[string]{Cause: topic.Failed, Source: lossTick{2}, Panic: "two"})
}

// A From function that calls runtime.Goexit ends the publisher's goroutine,
// as it would without the broker, and its value is counted as Failed, with
// an error saying so for Panic.
func TestAFromFunctionCallingGoexit(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	var log lossLog[string]
	_, cancel := b.Subscribe(
		topic.Name[string]("exits"),
		topic.From(func(t lossTick) (string, bool) {
			runtime.Goexit()
			return "", true
		}),
		topic.OnLoss(log.hook),
	)
	defer cancel()
	returned := false
	var wg sync.WaitGroup
	wg.Go(func() {
		b.Publish(lossTick{1})
		returned = true
	})
	wg.Wait()
	if returned {
		t.Fatal("Publish returned after its From function called runtime.Goexit")
	}
	wantLost(t, &b, "exits", topic.Lost{Failed: 1})
	got := log.all()
	if len(got) != 1 || got[0].Cause != topic.Failed || got[0].Source != (lossTick{1}) {
		t.Fatalf("losses %+v, want one Failed of lossTick{1}", got)
	}
	if err, ok := got[0].Panic.(error); !ok || !strings.Contains(err.Error(), "Goexit") {
		t.Errorf("Panic = %#v, want an error naming runtime.Goexit", got[0].Panic)
	}
}

// Values reach interface subscriptions as the interface value of their
// dynamic type, whether published as their concrete type or through an
// interface, with value and pointer receivers, and several dynamic types on
// one route: the conversion the routes compute once per dynamic type (see
// asSource) is that of the value.
type (
	byValue   struct{ s string }
	byPointer struct{ s string }
	bothWays  int
)

func (v byValue) String() string    { return "value " + v.s }
func (p *byPointer) String() string { return "pointer " + p.s }
func (n bothWays) String() string   { return fmt.Sprint("int ", int(n)) }
func (n bothWays) Error() string    { return fmt.Sprint("error ", int(n)) }

func TestInterfaceSubscriptionsReceiveTheDynamicType(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	stringers, cancelStringers := b.Subscribe(topic.Buffer[fmt.Stringer](16))
	defer cancelStringers()
	anys, cancelAnys := b.Subscribe(topic.Buffer[any](16))
	defer cancelAnys()
	errs, cancelErrs := b.Subscribe(
		topic.Buffer[string](16),
		topic.From(func(e error) (string, bool) { return "from " + e.Error(), true }),
	)
	defer cancelErrs()

	p := &byPointer{"p"}
	b.Publish(byValue{"v"})
	b.Publish(p)
	b.Publish(bothWays(7))
	b.Publish(any(byValue{"w"}))
	b.Publish(fmt.Stringer(&byPointer{"q"}))
	b.Publish(error(bothWays(8)))
	b.Publish(any(nil))

	want := []string{"value v", "pointer p", "int 7", "value w", "pointer q", "int 8"}
	var got []string
	for _, s := range takeAll(stringers) {
		got = append(got, s.String())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fmt.Stringer subscription: %q, want %q", got, want)
	}
	gotAny := takeAll(anys)
	wantAny := []any{byValue{"v"}, p, bothWays(7), byValue{"w"}, nil, bothWays(8), nil}
	if len(gotAny) != len(wantAny) {
		t.Fatalf("any subscription: %v, want %v", gotAny, wantAny)
	}
	for i, v := range gotAny {
		if i == 4 {
			if q, ok := v.(*byPointer); !ok || q.s != "q" {
				t.Errorf("any subscription, value %d: %#v, want &byPointer{q}", i, v)
			}
			continue
		}
		if v != wantAny[i] {
			t.Errorf("any subscription, value %d: %#v, want %#v", i, v, wantAny[i])
		}
	}
	if got, want := takeAll(errs), []string{"from error 7", "from error 8"}; !reflect.DeepEqual(got, want) {
		t.Errorf("From(error) subscription: %q, want %q", got, want)
	}
}

// A receiver already waiting on an unbuffered interface subscription is
// handed each value whole: a plain interface subscription is sent the two
// words of the interface value (boxedOut.send), which the runtime copies by
// the channel's own element type, here straight into the waiting receiver.
// Its dynamic type and data arrive, and a nil interface value as nil.
func TestInterfaceSubscriptionsHandValuesToAWaitingReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		stringers, cancelStringers := b.Subscribe(topic.Buffer[fmt.Stringer](0))
		defer cancelStringers()
		anys, cancelAnys := b.Subscribe(topic.Buffer[any](0))
		defer cancelAnys()

		p, q := &byPointer{"p"}, &byPointer{"q"}
		publish := []func(){
			func() { b.Publish(byValue{"v"}) }, // boxed for both, on a route of boxed sources only
			func() { b.Publish(p) },
			func() { b.Publish(bothWays(7)) },
			func() { b.Publish(fmt.Stringer(q)) },   // to any boxed, to fmt.Stringer as it is
			func() { b.Publish(fmt.Stringer(nil)) }, // likewise: a nil interface value
		}
		var gotS []string
		var gotA []any
		var wg sync.WaitGroup
		wg.Go(func() {
			for range publish {
				s := <-stringers
				if s == nil {
					gotS = append(gotS, "<nil>")
				} else {
					gotS = append(gotS, s.String())
				}
			}
		})
		wg.Go(func() {
			for range publish {
				gotA = append(gotA, <-anys)
			}
		})
		for _, f := range publish {
			synctest.Wait() // both receivers wait on their channel
			f()
		}
		wg.Wait()

		if want := []string{"value v", "pointer p", "int 7", "pointer q", "<nil>"}; !slices.Equal(gotS, want) {
			t.Errorf("fmt.Stringer subscription received %q, want %q", gotS, want)
		}
		if want := []any{byValue{"v"}, p, bothWays(7), q, nil}; !slices.Equal(gotA, want) {
			t.Errorf("any subscription received %#v, want %#v", gotA, want)
		}
		for _, st := range b.Subscriptions() {
			if st.Lost.Total() != 0 {
				t.Errorf("%v subscription: lost %+v, want nothing (its receiver was waiting)", st.Type, st.Lost)
			}
		}
	})
}
