package topic_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/seedaa7df82c/topic"
)

// errCode implements both error and fmt.Stringer with value receivers.
type errCode int

func (c errCode) Error() string  { return fmt.Sprintf("code %d", int(c)) }
func (c errCode) String() string { return fmt.Sprintf("#%d", int(c)) }

// strLabel implements fmt.Stringer but not error.
type strLabel string

func (l strLabel) String() string { return string(l) }

// ptrError implements error only through its pointer.
type ptrError struct{ msg string }

func (p *ptrError) Error() string { return p.msg }

// takeAll receives every value a channel holds right now, without blocking.
// Delivery happens inside Publish, so after Publish returns this sees every
// value the publication delivered.
func takeAll[T any](ch <-chan T) []T {
	var got []T
	for {
		select {
		case v, ok := <-ch:
			if !ok {
				return got
			}
			got = append(got, v)
		default:
			return got
		}
	}
}

// wantReceived checks that ch holds exactly want, in order, and is still open.
func wantReceived[T comparable](t *testing.T, name string, ch <-chan T, want ...T) {
	t.Helper()
	got := takeAll(ch)
	if !slices.Equal(got, want) {
		t.Errorf("%s received %v, want %v", name, got, want)
	}
	if isClosed(ch) {
		t.Errorf("%s: channel closed, want open", name)
	}
}

// isClosed reports whether ch is closed. It must be called on a drained
// channel: a pending value counts as open.
func isClosed[T any](ch <-chan T) bool {
	select {
	case _, ok := <-ch:
		return !ok
	default:
		return false
	}
}

// wantClosed checks that ch holds exactly want, in order, and is then closed.
func wantClosed[T comparable](t *testing.T, name string, ch <-chan T, want ...T) {
	t.Helper()
	var got []T
	for {
		select {
		case v, ok := <-ch:
			if ok {
				got = append(got, v)
				continue
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s received %v before closing, want %v", name, got, want)
			}
			return
		default:
			t.Errorf("%s received %v and is still open, want %v then closed", name, got, want)
			return
		}
	}
}

// panicMessage runs f and returns what it panicked with, if it did.
func panicMessage(f func()) (msg string, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			msg, panicked = fmt.Sprint(r), true
		}
	}()
	f()
	return "", false
}

func TestZeroBrokerIsReadyToUse(t *testing.T) {
	t.Parallel()
	type tick struct{ N int }
	var b topic.Broker
	b.Publish(tick{N: 0}) // before any subscription
	ch, cancel := b.Subscribe[tick]()
	defer cancel()
	b.Publish(tick{N: 1})
	wantReceived(t, "tick", ch, tick{N: 1})
}

func TestIdenticalTypeIsDelivered(t *testing.T) {
	t.Parallel()
	type tick struct{ N int }
	var b topic.Broker
	ticks, cancelTicks := b.Subscribe(topic.Buffer[tick](4))
	defer cancelTicks()
	ints, cancelInts := b.Subscribe(topic.Buffer[int](4))
	defer cancelInts()
	slice, cancelSlice := b.Subscribe(topic.Buffer[*[]int](4))
	defer cancelSlice()

	p := &[]int{1}
	b.Publish(tick{N: 1})
	b.Publish(2)
	b.Publish(p)
	b.Publish(tick{N: 3})

	wantReceived(t, "tick", ticks, tick{N: 1}, tick{N: 3})
	wantReceived(t, "int", ints, 2)
	wantReceived(t, "*[]int", slice, p)
}

func TestTypesWithTheSameUnderlyingTypeAreDistinctTopics(t *testing.T) {
	t.Parallel()
	type celsius float64
	type fahrenheit float64
	type tick struct{ N int }
	var b topic.Broker
	c, cancelC := b.Subscribe(topic.Buffer[celsius](4))
	defer cancelC()
	f, cancelF := b.Subscribe(topic.Buffer[float64](4))
	defer cancelF()
	s, cancelS := b.Subscribe(topic.Buffer[struct{ N int }](4))
	defer cancelS()

	b.Publish(fahrenheit(1))
	b.Publish(tick{N: 2})
	b.Publish(celsius(3))
	b.Publish(4.0)
	b.Publish(struct{ N int }{N: 5})

	wantReceived(t, "celsius", c, celsius(3))
	wantReceived(t, "float64", f, 4.0)
	wantReceived(t, "struct{ N int }", s, struct{ N int }{N: 5})
}

// A local type is a different type from one of the same name in another
// scope, although both print as the same name with %T.
func TestTypesWithTheSameNameInDifferentScopesAreDistinctTopics(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	type event struct{ N int }
	inner := func() (func() []int, func()) {
		type event struct{ N int }
		ch, cancel := b.Subscribe(topic.Buffer[event](4))
		return func() []int {
			var ns []int
			for _, e := range takeAll(ch) {
				ns = append(ns, e.N)
			}
			return ns
		}, cancel
	}
	innerTaken, cancelInner := inner()
	defer cancelInner()
	outer, cancelOuter := b.Subscribe(topic.Buffer[event](4))
	defer cancelOuter()

	b.Publish(event{N: 1})

	wantReceived(t, "outer event", outer, event{N: 1})
	if got := innerTaken(); len(got) != 0 {
		t.Errorf("inner event received %v, want nothing", got)
	}
}

// Different instantiations of a generic type are different types.
type box[T any] struct{ V T }

func TestInstantiationsOfAGenericTypeAreDistinctTopics(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	ints, cancelInts := b.Subscribe(topic.Buffer[box[int]](4))
	defer cancelInts()
	strs, cancelStrs := b.Subscribe(topic.Buffer[box[string]](4))
	defer cancelStrs()

	b.Publish(box[int]{V: 1})
	b.Publish(box[string]{V: "a"})
	b.Publish(box[int64]{V: 2})

	wantReceived(t, "box[int]", ints, box[int]{V: 1})
	wantReceived(t, "box[string]", strs, box[string]{V: "a"})
}

func TestInterfaceSubscriptionMatchesByDynamicType(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	errs, cancelErrs := b.Subscribe(topic.Buffer[error](8))
	defer cancelErrs()
	strs, cancelStrs := b.Subscribe(topic.Buffer[fmt.Stringer](8))
	defer cancelStrs()

	pe := &ptrError{msg: "ptr"}
	b.Publish(errCode(1))           // error and Stringer
	b.Publish(strLabel("x"))        // Stringer only
	b.Publish(42)                   // neither
	b.Publish(ptrError{msg: "val"}) // only *ptrError implements error
	b.Publish(pe)                   // error

	wantReceived(t, "error", errs, error(errCode(1)), error(pe))
	wantReceived(t, "fmt.Stringer", strs, fmt.Stringer(errCode(1)), fmt.Stringer(strLabel("x")))
}

// A nil pointer is a concrete value, not a nil interface: it reaches an
// interface subscription its type implements, boxed with its dynamic type.
func TestNilPointerReachesInterfaceItsTypeImplements(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	errs, cancel := b.Subscribe[error]()
	defer cancel()

	b.Publish((*ptrError)(nil))

	got := takeAll(errs)
	if len(got) != 1 {
		t.Fatalf("error received %v, want one (*ptrError)(nil)", got)
	}
	if p, ok := got[0].(*ptrError); !ok || p != nil {
		t.Errorf("error received %#v, want (*ptrError)(nil)", got[0])
	}
}

func TestAnySubscriptionReceivesEveryValue(t *testing.T) {
	t.Parallel()
	type tick struct{ N int }
	var b topic.Broker
	all, cancel := b.Subscribe(topic.Buffer[any](16))
	defer cancel()
	empty, cancelEmpty := b.Subscribe(topic.Buffer[interface{}](16))
	defer cancelEmpty()

	var e error = errCode(2)
	var s fmt.Stringer = strLabel("s")
	var v any = 3.5
	b.Publish(tick{N: 1})
	b.Publish(e)
	b.Publish(s)
	b.Publish(v)
	b.Publish("str")
	b.Publish(error(nil))
	b.Publish(any(nil))
	b.Publish((*ptrError)(nil))

	want := []any{tick{N: 1}, errCode(2), strLabel("s"), 3.5, "str", nil, nil, (*ptrError)(nil)}
	wantReceived(t, "any", all, want...)
	wantReceived(t, "interface{}", empty, want...)
}

// The dynamic type survives publication through an interface variable: an
// any subscription receives the value itself, not the interface wrapped again.
func TestAnySubscriptionSeesDynamicTypeOfInterfacePublication(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	all, cancel := b.Subscribe[any]()
	defer cancel()

	var e error = errCode(7)
	b.Publish(e)

	got := takeAll(all)
	if len(got) != 1 {
		t.Fatalf("any received %v, want one value", got)
	}
	if typ := fmt.Sprintf("%T", got[0]); typ != "topic_test.errCode" {
		t.Errorf("any received a %s, want topic_test.errCode", typ)
	}
}

func TestNilInterfaceValueReachesOnlyIdenticalAndAny(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	errs, cancelErrs := b.Subscribe[error]()
	defer cancelErrs()
	all, cancelAll := b.Subscribe[any]()
	defer cancelAll()
	strs, cancelStrs := b.Subscribe[fmt.Stringer]()
	defer cancelStrs()
	// Same method set as error, but a different type.
	errLike, cancelErrLike := b.Subscribe[interface{ Error() string }]()
	defer cancelErrLike()
	codes, cancelCodes := b.Subscribe[errCode]()
	defer cancelCodes()
	ptrs, cancelPtrs := b.Subscribe[*ptrError]()
	defer cancelPtrs()

	b.Publish(error(nil))

	wantReceived(t, "error", errs, nil)
	wantReceived(t, "any", all, nil)
	wantReceived(t, "fmt.Stringer", strs)
	wantReceived(t, "interface{ Error() string }", errLike)
	wantReceived(t, "errCode", codes)
	wantReceived(t, "*ptrError", ptrs)

	b.Publish(fmt.Stringer(nil))

	wantReceived(t, "error", errs)
	wantReceived(t, "any", all, nil)
	wantReceived(t, "fmt.Stringer", strs, nil)
	wantReceived(t, "interface{ Error() string }", errLike)

	b.Publish(any(nil))

	wantReceived(t, "error", errs)
	wantReceived(t, "any", all, nil)
	wantReceived(t, "fmt.Stringer", strs)
	wantReceived(t, "interface{ Error() string }", errLike)
}

// A nil interface publication matches From sources by the same rule: an
// identical source type or any, never another interface.
func TestNilInterfaceValueReachesOnlyIdenticalAndAnySources(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	fromErr, cancelErr := b.Subscribe(topic.From(func(e error) (string, bool) {
		return fmt.Sprint("error:", e == nil), true
	}))
	defer cancelErr()
	fromAny, cancelAny := b.Subscribe(topic.From(func(v any) (string, bool) {
		return fmt.Sprint("any:", v == nil), true
	}))
	defer cancelAny()
	fromStr, cancelStr := b.Subscribe(topic.From(func(s fmt.Stringer) (string, bool) {
		return "stringer", true
	}))
	defer cancelStr()

	b.Publish(error(nil))

	wantReceived(t, "From(error)", fromErr, "error:true")
	wantReceived(t, "From(any)", fromAny, "any:true")
	wantReceived(t, "From(fmt.Stringer)", fromStr)
}

// anything is a named interface without methods: it is not any, so it
// matches every value by dynamic type, but a nil value has none.
type anything interface{}

func TestNamedEmptyInterfaceMatchesEveryNonNilValue(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	ch, cancel := b.Subscribe(topic.Buffer[anything](8))
	defer cancel()

	b.Publish(1)
	b.Publish(error(errCode(2)))
	b.Publish(error(nil))
	b.Publish(any(nil))
	b.Publish(anything(nil)) // identical type: delivered
	b.Publish(any(3))

	wantReceived(t, "anything", ch, anything(1), anything(errCode(2)), nil, anything(3))
}

// Routes are resolved when a type is first published and cached: a
// subscription made after that, of any kind, is still reached, and one
// cancelled after that is no longer reached.
func TestSubscriptionsMadeAfterATypeWasRoutedAreReached(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	// An interface subscription makes the broker resolve and keep routes
	// for every type published below.
	wild, cancelWild := b.Subscribe(topic.Buffer[any](16))
	defer cancelWild()
	b.Publish(errCode(1))
	b.Publish(error(errCode(2)))
	b.Publish(strLabel("a"))
	takeAll(wild)

	codes, cancelCodes := b.Subscribe(topic.Buffer[errCode](4))
	defer cancelCodes()
	errs, cancelErrs := b.Subscribe(topic.Buffer[error](4))
	strs, cancelStrs := b.Subscribe(topic.Buffer[fmt.Stringer](4))
	defer cancelStrs()
	fromCode, cancelFromCode := b.Subscribe(
		topic.Buffer[string](4),
		topic.From(func(c errCode) (string, bool) { return "code", true }),
		topic.From(func(e error) (string, bool) { return "error", true }),
	)
	defer cancelFromCode()

	b.Publish(errCode(3))
	b.Publish(error(errCode(4)))
	b.Publish(strLabel("b"))

	wantReceived(t, "errCode", codes, errCode(3))
	wantReceived(t, "error", errs, error(errCode(3)), error(errCode(4)))
	wantReceived(t, "fmt.Stringer", strs, fmt.Stringer(errCode(3)), fmt.Stringer(errCode(4)), fmt.Stringer(strLabel("b")))
	wantReceived(t, "From", fromCode, "code", "error")

	cancelErrs()
	cancelWild()
	b.Publish(errCode(5))
	b.Publish(error(errCode(6)))

	wantClosed(t, "cancelled error", errs)
	wantClosed(t, "cancelled any", wild, any(errCode(3)), any(errCode(4)), any(strLabel("b")))
	wantReceived(t, "errCode", codes, errCode(5))
	wantReceived(t, "fmt.Stringer", strs, fmt.Stringer(errCode(5)), fmt.Stringer(errCode(6)))
	wantReceived(t, "From", fromCode, "code", "error")
}

// The same without any interface subscription present before: the
// broker's first subscription of each kind starts from nothing.
func TestInterfaceSubscriptionAfterOnlyConcreteOnesIsReached(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	codes, cancelCodes := b.Subscribe(topic.Buffer[errCode](4))
	defer cancelCodes()
	b.Publish(errCode(1))
	b.Publish(error(errCode(2))) // reaches nobody
	wantReceived(t, "errCode", codes, errCode(1))

	errs, cancelErrs := b.Subscribe(topic.Buffer[error](4))
	defer cancelErrs()
	b.Publish(errCode(3))
	b.Publish(error(errCode(4)))

	wantReceived(t, "errCode", codes, errCode(3))
	wantReceived(t, "error", errs, error(errCode(3)), error(errCode(4)))
}

func TestConcreteSubscriptionDoesNotSeeInterfacePublication(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	codes, cancelCodes := b.Subscribe[errCode]()
	defer cancelCodes()
	fromCode, cancelFrom := b.Subscribe(topic.From(func(c errCode) (string, bool) {
		return c.Error(), true
	}))
	defer cancelFrom()
	errs, cancelErrs := b.Subscribe[error]()
	defer cancelErrs()

	var e error = errCode(1)
	b.Publish(e)

	wantReceived(t, "errCode", codes)
	wantReceived(t, "From(errCode)", fromCode)
	wantReceived(t, "error", errs, error(errCode(1)))
}

// Publishing through one interface reaches a subscription to another
// interface that the dynamic value implements, and not one it does not.
func TestInterfacePublicationReachesOtherInterfaceItsValueImplements(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	errs, cancelErrs := b.Subscribe(topic.Buffer[error](4))
	defer cancelErrs()
	strs, cancelStrs := b.Subscribe(topic.Buffer[fmt.Stringer](4))
	defer cancelStrs()

	var s fmt.Stringer = errCode(1)
	b.Publish(s)
	s = strLabel("x")
	b.Publish(s)
	var v any = errCode(2)
	b.Publish(v)

	wantReceived(t, "error", errs, error(errCode(1)), error(errCode(2)))
	wantReceived(t, "fmt.Stringer", strs, fmt.Stringer(errCode(1)), fmt.Stringer(strLabel("x")), fmt.Stringer(errCode(2)))
}

func TestFromConvertsItsSourceType(t *testing.T) {
	t.Parallel()
	type celsius float64
	type fahrenheit float64
	var b topic.Broker
	ch, cancel := b.Subscribe(
		topic.Buffer[fahrenheit](4),
		topic.From(func(c celsius) (fahrenheit, bool) { return fahrenheit(c*9/5 + 32), true }),
	)
	defer cancel()

	b.Publish(celsius(100))
	b.Publish(fahrenheit(-40)) // own type: still matched directly
	b.Publish(float64(1))      // neither

	wantReceived(t, "fahrenheit", ch, 212, -40)
}

func TestFromSourcesAreConsideredInOrderThenOwnType(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	codeFirst, cancel1 := b.Subscribe(
		topic.Buffer[string](4),
		topic.From(func(c errCode) (string, bool) { return "code", true }),
		topic.From(func(s fmt.Stringer) (string, bool) { return "stringer", true }),
		topic.From(func(v any) (string, bool) { return "any", true }),
	)
	defer cancel1()
	stringerFirst, cancel2 := b.Subscribe(
		topic.Buffer[string](4),
		topic.From(func(s fmt.Stringer) (string, bool) { return "stringer", true }),
		topic.From(func(c errCode) (string, bool) { return "code", true }),
	)
	defer cancel2()
	anyFirst, cancel3 := b.Subscribe(
		topic.Buffer[string](4),
		topic.From(func(v any) (string, bool) { return "any", true }),
		topic.From(func(c errCode) (string, bool) { return "code", true }),
	)
	defer cancel3()

	b.Publish(errCode(1))
	b.Publish(strLabel("x"))
	b.Publish(3)
	b.Publish("own") // the own type comes after every From source

	wantReceived(t, "code first", codeFirst, "code", "stringer", "any", "any")
	wantReceived(t, "stringer first", stringerFirst, "stringer", "stringer", "own")
	wantReceived(t, "any first", anyFirst, "any", "any", "any", "any")
}

// A source that does not match is skipped: the next one, and then the own
// type, still get their turn.
func TestNonMatchingSourceIsSkipped(t *testing.T) {
	t.Parallel()
	type tick struct{ N int }
	var b topic.Broker
	ch, cancel := b.Subscribe(
		topic.Buffer[tick](4),
		topic.From(func(e error) (tick, bool) { return tick{N: -1}, true }),
		topic.From(func(s string) (tick, bool) { return tick{N: len(s)}, true }),
	)
	defer cancel()

	b.Publish(tick{N: 1}) // tick does not implement error
	b.Publish("abc")

	wantReceived(t, "tick", ch, tick{N: 1}, tick{N: 3})
}

func TestFromFilterDeliversOnlyWhenItReportsTrue(t *testing.T) {
	t.Parallel()
	type tick struct{ N int }
	var b topic.Broker
	ch, cancel := b.Subscribe(
		topic.Buffer[tick](8),
		topic.From(func(t tick) (tick, bool) { return t, t.N%2 == 0 }),
	)
	defer cancel()

	for i := range 6 {
		b.Publish(tick{N: i})
	}

	wantReceived(t, "even ticks", ch, tick{N: 0}, tick{N: 2}, tick{N: 4})
}

func TestRejectingSourceStopsLaterSources(t *testing.T) {
	t.Parallel()
	type tick struct{ N int }
	var b topic.Broker
	var later int
	ch, cancel := b.Subscribe(
		topic.Buffer[tick](4),
		topic.From(func(c errCode) (tick, bool) { return tick{N: int(c)}, c > 0 }),
		topic.From(func(s fmt.Stringer) (tick, bool) { later++; return tick{N: 100}, true }),
		topic.From(func(v any) (tick, bool) { later++; return tick{N: 200}, true }),
	)
	defer cancel()

	b.Publish(errCode(0)) // rejected by its first matching source
	b.Publish(errCode(5))

	wantReceived(t, "tick", ch, tick{N: 5})
	if later != 0 {
		t.Errorf("later sources ran %d times, want 0", later)
	}
}

func TestRejectingSourceStopsOwnType(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	// A concrete source shadows an interface own type.
	strs, cancelStrs := b.Subscribe(
		topic.Buffer[fmt.Stringer](4),
		topic.From(func(c errCode) (fmt.Stringer, bool) { return c, c > 0 }),
	)
	defer cancelStrs()
	// A source of the own type shadows the own type.
	codes, cancelCodes := b.Subscribe(
		topic.Buffer[errCode](4),
		topic.From(func(c errCode) (errCode, bool) { return c, c > 0 }),
	)
	defer cancelCodes()
	// An any source shadows everything after it.
	labels, cancelLabels := b.Subscribe(
		topic.Buffer[strLabel](4),
		topic.From(func(v any) (strLabel, bool) { return "any", false }),
	)
	defer cancelLabels()

	b.Publish(errCode(0))
	b.Publish(errCode(1))
	b.Publish(strLabel("x"))

	wantReceived(t, "fmt.Stringer", strs, fmt.Stringer(errCode(1)), fmt.Stringer(strLabel("x")))
	wantReceived(t, "errCode", codes, errCode(1))
	wantReceived(t, "strLabel", labels)
}

func TestRepeatedSourceTypeLaterIsUnreachable(t *testing.T) {
	t.Parallel()
	type celsius float64
	type fahrenheit float64
	var b topic.Broker
	var first, second int
	accept, cancelAccept := b.Subscribe(
		topic.Buffer[fahrenheit](4),
		topic.From(func(c celsius) (fahrenheit, bool) { first++; return 1, true }),
		topic.From(func(c celsius) (fahrenheit, bool) { second++; return 2, true }),
	)
	defer cancelAccept()
	reject, cancelReject := b.Subscribe(
		topic.Buffer[fahrenheit](4),
		topic.From(func(c celsius) (fahrenheit, bool) { return 1, false }),
		topic.From(func(c celsius) (fahrenheit, bool) { second++; return 2, true }),
	)
	defer cancelReject()
	errs, cancelErrs := b.Subscribe(
		topic.Buffer[string](4),
		topic.From(func(e error) (string, bool) { return "first", true }),
		topic.From(func(e error) (string, bool) { second++; return "second", true }),
	)
	defer cancelErrs()

	b.Publish(celsius(0))
	b.Publish(errCode(1))

	wantReceived(t, "accepting first", accept, 1)
	wantReceived(t, "rejecting first", reject)
	wantReceived(t, "error sources", errs, "first")
	if first != 1 {
		t.Errorf("first source ran %d times for one publication, want 1", first)
	}
	if second != 0 {
		t.Errorf("repeated sources ran %d times, want 0", second)
	}
}

func TestFromWithInterfaceSourceMatchesByDynamicType(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	ch, cancel := b.Subscribe(
		topic.Buffer[string](8),
		topic.From(func(e error) (string, bool) { return "error " + e.Error(), true }),
	)
	defer cancel()

	b.Publish(errCode(3))
	b.Publish(errors.New("plain"))
	b.Publish(42)
	b.Publish(strLabel("not an error"))
	var s fmt.Stringer = errCode(4) // published as fmt.Stringer, is an error
	b.Publish(s)
	b.Publish("direct")

	wantReceived(t, "string", ch, "error code 3", "error plain", "error code 4", "direct")
}

func TestInterfaceOwnTypeWithConcreteFromSource(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	ch, cancel := b.Subscribe(
		topic.Buffer[fmt.Stringer](8),
		topic.From(func(c errCode) (fmt.Stringer, bool) {
			return strLabel(fmt.Sprintf("converted %d", int(c))), true
		}),
	)
	defer cancel()

	b.Publish(errCode(1))    // the concrete source, not the own type
	b.Publish(strLabel("x")) // the own type, by dynamic type
	b.Publish(5)             // nothing
	var s fmt.Stringer = errCode(2)
	b.Publish(s) // published as fmt.Stringer: identical own type, not the concrete source

	wantReceived(t, "fmt.Stringer", ch,
		fmt.Stringer(strLabel("converted 1")),
		fmt.Stringer(strLabel("x")),
		fmt.Stringer(errCode(2)),
	)
}

func TestFromRunsBeforePublishReturns(t *testing.T) {
	t.Parallel()
	type tick struct{ N int }
	var b topic.Broker
	var seen []int
	_, cancel := b.Subscribe(topic.From(func(t tick) (tick, bool) {
		seen = append(seen, t.N)
		return t, false
	}))
	defer cancel()

	b.Publish(tick{N: 1})
	b.Publish(tick{N: 2})

	if !slices.Equal(seen, []int{1, 2}) {
		t.Errorf("From saw %v once Publish returned, want [1 2]", seen)
	}
}

func TestEverySubscriptionOfATypeReceivesTheValue(t *testing.T) {
	t.Parallel()
	type tick struct{ N int }
	var b topic.Broker
	var chans []<-chan tick
	for range 10 {
		ch, cancel := b.Subscribe[tick]()
		defer cancel()
		chans = append(chans, ch)
	}

	b.Publish(tick{N: 1})

	for i, ch := range chans {
		wantReceived(t, fmt.Sprint("subscription ", i), ch, tick{N: 1})
	}
}

func TestSequentialPublicationsArriveInOrder(t *testing.T) {
	t.Parallel()
	type tick struct{ N int }
	var b topic.Broker
	ch, cancel := b.Subscribe(
		topic.Buffer[tick](100),
		topic.From(func(n int) (tick, bool) { return tick{N: n}, true }),
	)
	defer cancel()

	var want []tick
	for i := range 100 {
		want = append(want, tick{N: i})
		if i%3 == 0 {
			b.Publish(i) // through the source
		} else {
			b.Publish(tick{N: i}) // directly
		}
	}

	wantReceived(t, "tick", ch, want...)
}

func TestFullSubscriptionDropsForItselfOnly(t *testing.T) {
	t.Parallel()
	type tick struct{ N int }
	var b topic.Broker
	one, cancelOne := b.Subscribe[tick]()
	defer cancelOne()
	three, cancelThree := b.Subscribe(topic.Buffer[tick](3))
	defer cancelThree()
	all, cancelAll := b.Subscribe(topic.Buffer[any](3))
	defer cancelAll()

	for i := range 5 {
		b.Publish(tick{N: i})
	}

	wantReceived(t, "capacity 1", one, tick{N: 0})
	wantReceived(t, "capacity 3", three, tick{N: 0}, tick{N: 1}, tick{N: 2})
	wantReceived(t, "any capacity 3", all, any(tick{N: 0}), any(tick{N: 1}), any(tick{N: 2}))

	// Room again: the next publication is accepted.
	b.Publish(tick{N: 5})
	wantReceived(t, "capacity 1", one, tick{N: 5})
}

// Inside a bubble, a blocked Publish would be reported as a deadlock.
func TestPublishNeverBlocksOnAnAbandonedSubscriber(t *testing.T) {
	t.Parallel()
	type tick struct{ N int }
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		buffered, cancelBuffered := b.Subscribe[tick]()
		defer cancelBuffered()
		unbuffered, cancelUnbuffered := b.Subscribe(topic.Buffer[tick](0))
		defer cancelUnbuffered()
		all, cancelAll := b.Subscribe[any]()
		defer cancelAll()

		for i := range 1000 {
			b.Publish(tick{N: i})
		}

		wantReceived(t, "buffered", buffered, tick{N: 0})
		wantReceived(t, "unbuffered", unbuffered)
		wantReceived(t, "any", all, any(tick{N: 0}))
	})
}

func TestDefaultCapacityIsOne(t *testing.T) {
	t.Parallel()
	type tick struct{ N int }
	var b topic.Broker
	ch, cancel := b.Subscribe[tick]()
	defer cancel()
	withFrom, cancelFrom := b.Subscribe(topic.From(func(n int) (tick, bool) { return tick{N: n}, true }))
	defer cancelFrom()

	if cap(ch) != 1 {
		t.Errorf("cap = %d, want 1", cap(ch))
	}
	if cap(withFrom) != 1 {
		t.Errorf("cap with From = %d, want 1", cap(withFrom))
	}
	b.Publish(tick{N: 1})
	b.Publish(tick{N: 2})
	wantReceived(t, "tick", ch, tick{N: 1})
}

// unbufferedDelivery checks that a subscription created with opts is
// unbuffered: a value is dropped unless a receiver is already waiting.
func unbufferedDelivery(t *testing.T, opts ...topic.Option[int]) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		ch, cancel := b.Subscribe(opts...)
		defer cancel()
		if cap(ch) != 0 {
			t.Errorf("cap = %d, want 0", cap(ch))
		}

		b.Publish(1) // nobody is receiving: dropped

		got := make(chan int)
		go func() { got <- <-ch }()
		synctest.Wait() // the receiver is now blocked in <-ch

		b.Publish(2)

		if v := <-got; v != 2 {
			t.Errorf("waiting receiver got %d, want 2", v)
		}
		b.Publish(3) // nobody is receiving again: dropped
		wantReceived(t, "int", ch)
	})
}

func TestBufferZeroIsUnbuffered(t *testing.T) {
	t.Parallel()
	unbufferedDelivery(t, topic.Buffer[int](0))
}

func TestNegativeBufferIsZero(t *testing.T) {
	t.Parallel()
	unbufferedDelivery(t, topic.Buffer[int](-1))
	unbufferedDelivery(t, topic.Buffer[int](-1000))
}

func TestBufferSetsCapacity(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	ch, cancel := b.Subscribe(topic.Buffer[int](5))
	defer cancel()
	if cap(ch) != 5 {
		t.Errorf("cap = %d, want 5", cap(ch))
	}
	for i := range 7 {
		b.Publish(i)
	}
	wantReceived(t, "int", ch, 0, 1, 2, 3, 4)
}

func TestLastBufferWins(t *testing.T) {
	t.Parallel()
	from := topic.From(func(s string) (int, bool) { return len(s), true })
	tests := []struct {
		name string
		opts []topic.Option[int]
		want int
	}{
		{"larger then smaller", []topic.Option[int]{topic.Buffer[int](8), topic.Buffer[int](2)}, 2},
		{"smaller then larger", []topic.Option[int]{topic.Buffer[int](2), topic.Buffer[int](8)}, 8},
		{"zero then positive", []topic.Option[int]{topic.Buffer[int](0), topic.Buffer[int](3)}, 3},
		{"positive then zero", []topic.Option[int]{topic.Buffer[int](3), topic.Buffer[int](0)}, 0},
		{"positive then negative", []topic.Option[int]{topic.Buffer[int](4), topic.Buffer[int](-1)}, 0},
		{"negative then positive", []topic.Option[int]{topic.Buffer[int](-1), topic.Buffer[int](4)}, 4},
		{"around a From", []topic.Option[int]{topic.Buffer[int](1), from, topic.Buffer[int](6)}, 6},
		{"before a From", []topic.Option[int]{topic.Buffer[int](6), from}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b topic.Broker
			ch, cancel := b.Subscribe(tt.opts...)
			defer cancel()
			if cap(ch) != tt.want {
				t.Errorf("cap = %d, want %d", cap(ch), tt.want)
			}
		})
	}
}

func TestZeroOptionHasNoEffect(t *testing.T) {
	t.Parallel()
	var zero topic.Option[int]
	var b topic.Broker

	alone, cancelAlone := b.Subscribe(zero)
	defer cancelAlone()
	afterBuffer, cancelAfterBuffer := b.Subscribe(topic.Buffer[int](4), zero)
	defer cancelAfterBuffer()
	afterFrom, cancelAfterFrom := b.Subscribe(
		topic.Buffer[int](4),
		topic.From(func(s string) (int, bool) { return len(s), true }),
		zero,
		zero,
	)
	defer cancelAfterFrom()

	if cap(alone) != 1 {
		t.Errorf("zero Option alone: cap = %d, want the default 1", cap(alone))
	}
	if cap(afterBuffer) != 4 {
		t.Errorf("zero Option after Buffer(4): cap = %d, want 4", cap(afterBuffer))
	}
	if cap(afterFrom) != 4 {
		t.Errorf("zero Option after Buffer(4) and From: cap = %d, want 4", cap(afterFrom))
	}

	b.Publish("abc")
	b.Publish(7)

	wantReceived(t, "zero Option alone", alone, 7)
	wantReceived(t, "zero Option after Buffer", afterBuffer, 7)
	wantReceived(t, "zero Option after From", afterFrom, 3, 7)
}

func TestCancelClosesTheChannel(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	ch, cancel := b.Subscribe[int]()
	cancel()
	wantClosed(t, "int", ch)

	// A range loop over the channel ends.
	ranged, cancelRanged := b.Subscribe(topic.Buffer[int](2))
	b.Publish(1)
	cancelRanged()
	var got []int
	for v := range ranged {
		got = append(got, v)
	}
	if !slices.Equal(got, []int{1}) {
		t.Errorf("range received %v, want [1]", got)
	}
}

// Cancelling wakes a receiver blocked on the channel.
func TestCancelEndsABlockedReceive(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		ch, cancel := b.Subscribe(topic.Buffer[int](0))
		done := make(chan bool)
		go func() {
			_, ok := <-ch
			done <- ok
		}()
		synctest.Wait()
		cancel()
		if ok := <-done; ok {
			t.Error("blocked receive got a value, want the channel closed")
		}
	})
}

func TestCancelIsIdempotent(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	ch, cancel := b.Subscribe[int]()
	first, cancelFirst := b.Subscribe[int]()
	defer cancelFirst()

	cancel()
	cancel()
	last, cancelLast := b.Subscribe[int]() // registered between repeated cancels
	defer cancelLast()
	cancel()

	b.Publish(1)

	wantClosed(t, "cancelled", ch)
	wantReceived(t, "registered before", first, 1)
	wantReceived(t, "registered after", last, 1)
}

func TestNothingIsDeliveredAfterCancel(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	var calls int
	direct, cancelDirect := b.Subscribe(topic.Buffer[int](4))
	all, cancelAll := b.Subscribe(topic.Buffer[any](4))
	converted, cancelConverted := b.Subscribe(
		topic.Buffer[string](4),
		topic.From(func(n int) (string, bool) { calls++; return fmt.Sprint(n), true }),
	)

	b.Publish(1)
	cancelDirect()
	cancelAll()
	cancelConverted()
	b.Publish(2)

	wantClosed(t, "int", direct, 1)
	wantClosed(t, "any", all, any(1))
	wantClosed(t, "From(int)", converted, "1")
	if calls != 1 {
		t.Errorf("From ran %d times, want 1: a cancelled subscription is unregistered", calls)
	}
}

func TestValuesAcceptedBeforeCancelRemainReceivable(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	ch, cancel := b.Subscribe(topic.Buffer[int](8))
	for i := range 5 {
		b.Publish(i)
	}
	cancel()
	wantClosed(t, "int", ch, 0, 1, 2, 3, 4)
}

func TestCancelAffectsOnlyItsSubscription(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	var chans []<-chan int
	var cancels []func()
	for range 5 {
		ch, cancel := b.Subscribe[int]()
		chans = append(chans, ch)
		cancels = append(cancels, cancel)
	}
	all, cancelAll := b.Subscribe[any]()
	defer cancelAll()

	cancels[1]()
	cancels[3]()
	b.Publish(7)

	for i, ch := range chans {
		if i == 1 || i == 3 {
			wantClosed(t, fmt.Sprint("cancelled ", i), ch)
			continue
		}
		wantReceived(t, fmt.Sprint("subscription ", i), ch, 7)
		cancels[i]()
	}
	wantReceived(t, "any", all, any(7))
}

func TestBrokersAreIndependent(t *testing.T) {
	t.Parallel()
	var a, b topic.Broker
	aInts, cancelAInts := a.Subscribe[int]()
	defer cancelAInts()
	bInts, cancelBInts := b.Subscribe[int]()
	aAll, cancelAAll := a.Subscribe[any]()
	defer cancelAAll()
	bAll, cancelBAll := b.Subscribe[any]()
	defer cancelBAll()
	bErrs, cancelBErrs := b.Subscribe[error]()
	defer cancelBErrs()

	a.Publish(1)
	a.Publish(errCode(2))

	wantReceived(t, "a int", aInts, 1)
	wantReceived(t, "a any", aAll, any(1))
	wantReceived(t, "b int", bInts)
	wantReceived(t, "b any", bAll)
	wantReceived(t, "b error", bErrs)

	// Cancelling on one broker leaves the other's subscriptions alone.
	cancelBInts()
	a.Publish(3)
	wantReceived(t, "a int after b's cancel", aInts, 3)
}

func TestPublishWithNoSubscriberHasNoEffect(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	b.Publish(1)
	b.Publish(errCode(1))
	b.Publish(error(nil))
	b.Publish(any(nil))

	// Nothing was retained for a later subscriber.
	ints, cancelInts := b.Subscribe[int]()
	defer cancelInts()
	all, cancelAll := b.Subscribe[any]()
	defer cancelAll()
	wantReceived(t, "int", ints)
	wantReceived(t, "any", all)

	// Nor when every subscription of the type has gone.
	_, cancel := b.Subscribe[string]()
	cancel()
	b.Publish("gone")
	wantReceived(t, "any", all, any("gone"))
}

func TestNilFromPanicsAtSubscribe(t *testing.T) {
	t.Parallel()
	var nilFunc func(errCode) (int, bool)
	tests := []struct {
		name string
		from func() topic.Option[int]
	}{
		{"concrete source", func() topic.Option[int] { return topic.From[int, errCode](nil) }},
		{"interface source", func() topic.Option[int] { return topic.From[int, error](nil) }},
		{"any source", func() topic.Option[int] { return topic.From[int, any](nil) }},
		{"own type source", func() topic.Option[int] { return topic.From[int, int](nil) }},
		{"typed nil variable", func() topic.Option[int] { return topic.From(nilFunc) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var opt topic.Option[int]
			if msg, panicked := panicMessage(func() { opt = tt.from() }); panicked {
				t.Fatalf("From(nil) panicked with %q; the panic belongs to Subscribe", msg)
			}

			var b topic.Broker
			var calls int
			valid := topic.From(func(c errCode) (int, bool) { calls++; return int(c), true })
			for _, opts := range [][]topic.Option[int]{
				{opt},
				{topic.Buffer[int](2), valid, opt},
				{opt, valid},
			} {
				msg, panicked := panicMessage(func() { b.Subscribe(opts...) })
				if !panicked {
					t.Fatalf("Subscribe with a nil From function did not panic")
				}
				if !strings.HasPrefix(msg, "topic: ") {
					t.Errorf("Subscribe panicked with %q, want a %q prefix", msg, "topic: ")
				}
			}

			// Not later: publishing what the failed subscriptions named
			// neither panics nor reaches them.
			if msg, panicked := panicMessage(func() {
				b.Publish(errCode(1))
				b.Publish(error(errCode(2)))
				b.Publish(3)
				b.Publish("s")
			}); panicked {
				t.Fatalf("Publish after a failed Subscribe panicked with %q", msg)
			}
			if calls != 0 {
				t.Errorf("a From of a failed Subscribe ran %d times, want 0", calls)
			}
		})
	}
}

// Every call that takes a context panics with a message naming the call
// when given a nil one, rather than with a nil pointer deep inside it.
func TestACallGivenANilContextPanicsNamingIt(t *testing.T) {
	var b topic.Broker
	b.Retain[int](topic.Retention{Count: 1})
	f := b.Follow[int]()
	defer f.Close()
	var none context.Context // the input under test
	calls := map[string]func(){
		"Settle":   func() { _ = b.Settle(none) },
		"Next":     func() { _, _ = f.Next(none) },
		"Wait":     func() { _ = f.Wait(none) },
		"Attempt":  func() { topic.Attempt(none) },
		"Shutdown": func() { _ = b.Shutdown(none) },
	}
	for _, call := range []string{"Settle", "Next", "Wait", "Attempt", "Shutdown"} {
		want := "topic: " + call + " with a nil context"
		if msg, panicked := panicMessage(calls[call]); !panicked || msg != want {
			t.Errorf("%s(nil) panicked %v with %q; want %q", call, panicked, msg, want)
		}
	}
}
