package topic_test

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// dynamicValues returns n values of n distinct types made at run time:
// arrays of empty structs of lengths 1 to n, which take no memory.
func dynamicValues(n int) []any {
	elem := reflect.TypeFor[struct{}]()
	values := make([]any, n)
	for i := range values {
		values[i] = reflect.Zero(reflect.ArrayOf(i+1, elem)).Interface()
	}
	return values
}

// routedBytes returns the bytes allocated to route the values' types on a
// fresh broker with an interface subscription none of them matches.
func routedBytes(values []any) uint64 {
	var b topic.Broker
	_, cancel := b.Subscribe[fmt.Stringer]()
	defer cancel()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, v := range values {
		b.Publish(v)
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Routing a new type costs amortised O(1): the memory allocated per type
// does not grow with the number of types routed before. (A table copied
// whole for each new type allocates in proportion to the types: eight times
// as much per type for eight times as many.)
func TestRoutingNewTypesIsLinear(t *testing.T) {
	small, large := dynamicValues(512), dynamicValues(4096)
	routedBytes(large) // make every type first, outside the measurement
	perSmall := float64(routedBytes(small)) / 512
	perLarge := float64(routedBytes(large)) / 4096
	if perLarge > 2*perSmall {
		t.Errorf("routing allocated %.0f B per type for 4096 types, %.0f B for 512: not linear", perLarge, perSmall)
	}
}

// Types routed while other publishers look up theirs: every publication of a
// type a subscription matches reaches it, however the table grows meanwhile.
func TestNewTypesAreRoutedWhilePublishersRun(t *testing.T) {
	t.Parallel()
	const publishers, perPublisher = 4, 1500
	values := dynamicValues(publishers * perPublisher)
	var b topic.Broker
	all, cancel := b.Subscribe(topic.Buffer[any](2 * len(values)))
	defer cancel()
	var concrete atomic.Int64
	ints, cancelInts := b.Subscribe(topic.Buffer[int](publishers * perPublisher))
	defer cancelInts()
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for i := range perPublisher {
				b.Publish(values[p*perPublisher+i]) // a new type, through any
				b.Publish(i)                        // an old one, looked up meanwhile
				concrete.Add(1)
			}
		})
	}
	wg.Wait()
	// Each value through any reaches the any subscription; each int reaches
	// both subscriptions.
	if got, want := len(all), len(values)+int(concrete.Load()); got != want {
		t.Errorf("the any subscription received %d values, want %d", got, want)
	}
	if got := len(ints); got != publishers*perPublisher {
		t.Errorf("the int subscription received %d values, want %d", got, publishers*perPublisher)
	}
	for _, st := range b.Subscriptions() {
		if st.Lost.Total() != 0 {
			t.Errorf("%v lost %+v", st.Type, st.Lost)
		}
	}
}
