package topic_test

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// Publishers of new dynamic types (arrays made by reflect.ArrayOf,
// published through any), of dynamic types seen before and of a known
// type, while others subscribe and cancel interface subscriptions and take
// snapshots; then Shutdown and more new types. Every publication reaches
// the persistent subscriptions or is counted there.
func TestTheTableUnderChurnLosesNoPublication(t *testing.T) {
	elems := []reflect.Type{reflect.TypeFor[byte](), reflect.TypeFor[int16](), reflect.TypeFor[uint32](), reflect.TypeFor[float64]()}
	const pubs, perPub = 4, 600
	// Types are made ahead: reflect.ArrayOf is slow and serialised.
	types := make([][]reflect.Type, pubs+1)
	for p := range types {
		for i := range perPub {
			types[p] = append(types[p], reflect.ArrayOf(1+p*perPub+i+trialBase, elems[i%len(elems)]))
		}
	}
	trials := 3
	if testing.Short() {
		trials = 1 // the three run whole in make stress
	}
	for trial := range trials {
		var b topic.Broker
		anyCh, _ := b.Subscribe(topic.Name[any]("any"), topic.Buffer[any](256))
		slowCh, _ := b.Subscribe(topic.Name[any]("slow"), topic.Buffer[any](256), topic.OnLoss(func(topic.Loss[any]) {}))
		kCh, _ := b.Subscribe(topic.Name[valK]("k"), topic.Buffer[valK](256))
		var got [3]atomic.Int64
		var consumers sync.WaitGroup
		consumers.Go(func() {
			for range anyCh {
				got[0].Add(1)
			}
		})
		consumers.Go(func() {
			for range slowCh {
				got[1].Add(1)
			}
		})
		consumers.Go(func() {
			for range kCh {
				got[2].Add(1)
			}
		})
		var published, publishedK atomic.Int64
		stop := make(chan struct{})
		var churn sync.WaitGroup
		for i := range 3 {
			churn.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					switch i {
					case 0:
						_, c := b.Subscribe[fmt.Stringer]()
						c()
					case 1:
						_, c := b.Subscribe[any](topic.Buffer[any](0))
						_, c2 := b.Subscribe[interface{ Len() int }](topic.OnLoss(func(topic.Loss[interface{ Len() int }]) {}))
						c()
						c2()
					case 2:
						_ = b.Subscriptions()
						_, c := b.Subscribe[valK](topic.From(func(x any) (valK, bool) { return valK{}, false }))
						c()
					}
				}
			})
		}
		var wg sync.WaitGroup
		for p := range pubs {
			wg.Go(func() {
				for i, typ := range types[p] {
					b.Publish[any](reflect.New(typ).Elem().Interface())
					published.Add(1)
					if i%4 == 0 { // one seen before, maybe by another publisher
						b.Publish[any](reflect.New(types[(p+1)%pubs][i/2]).Elem().Interface())
						published.Add(1)
					}
					b.Publish(valK{i})
					publishedK.Add(1)
				}
			})
		}
		wg.Wait()
		close(stop)
		churn.Wait()
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		consumers.Wait()
		// After the seal: new types, through the in-place table, and old ones.
		for i, typ := range types[pubs] {
			b.Publish[any](reflect.New(typ).Elem().Interface())
			b.Publish[any](reflect.New(types[0][i]).Elem().Interface())
			published.Add(2)
		}
		b.Publish(valK{})
		publishedK.Add(1)
		total := published.Load() + publishedK.Load()
		for i, c := range []struct {
			name string
			want int64
		}{{"any", total}, {"slow", total}, {"k", publishedK.Load()}} {
			st := hStats(t, &b, c.name)
			if n := got[i].Load() + int64(st.Lost.Total()); n != c.want {
				t.Errorf("trial %d: %s: published %d, received %d, lost %+v: %d unaccounted",
					trial, c.name, c.want, got[i].Load(), st.Lost, c.want-n)
			}
		}
	}
}

const trialBase = 1000

// tableT0 to tableT63 are the concrete types of
// TestTableInsertionsAreSeenByLaterPublications, each routed in its turn.
type (
	tableT0  struct{ N int }
	tableT1  struct{ N int }
	tableT2  struct{ N int }
	tableT3  struct{ N int }
	tableT4  struct{ N int }
	tableT5  struct{ N int }
	tableT6  struct{ N int }
	tableT7  struct{ N int }
	tableT8  struct{ N int }
	tableT9  struct{ N int }
	tableT10 struct{ N int }
	tableT11 struct{ N int }
	tableT12 struct{ N int }
	tableT13 struct{ N int }
	tableT14 struct{ N int }
	tableT15 struct{ N int }
	tableT16 struct{ N int }
	tableT17 struct{ N int }
	tableT18 struct{ N int }
	tableT19 struct{ N int }
	tableT20 struct{ N int }
	tableT21 struct{ N int }
	tableT22 struct{ N int }
	tableT23 struct{ N int }
	tableT24 struct{ N int }
	tableT25 struct{ N int }
	tableT26 struct{ N int }
	tableT27 struct{ N int }
	tableT28 struct{ N int }
	tableT29 struct{ N int }
	tableT30 struct{ N int }
	tableT31 struct{ N int }
	tableT32 struct{ N int }
	tableT33 struct{ N int }
	tableT34 struct{ N int }
	tableT35 struct{ N int }
	tableT36 struct{ N int }
	tableT37 struct{ N int }
	tableT38 struct{ N int }
	tableT39 struct{ N int }
	tableT40 struct{ N int }
	tableT41 struct{ N int }
	tableT42 struct{ N int }
	tableT43 struct{ N int }
	tableT44 struct{ N int }
	tableT45 struct{ N int }
	tableT46 struct{ N int }
	tableT47 struct{ N int }
	tableT48 struct{ N int }
	tableT49 struct{ N int }
	tableT50 struct{ N int }
	tableT51 struct{ N int }
	tableT52 struct{ N int }
	tableT53 struct{ N int }
	tableT54 struct{ N int }
	tableT55 struct{ N int }
	tableT56 struct{ N int }
	tableT57 struct{ N int }
	tableT58 struct{ N int }
	tableT59 struct{ N int }
	tableT60 struct{ N int }
	tableT61 struct{ N int }
	tableT62 struct{ N int }
	tableT63 struct{ N int }
)

// tableTyped subscribes to one of tableTypes and publishes it.
type tableTyped struct {
	subscribe func(b *topic.Broker) (count func() int, stop func())
	publish   func(b *topic.Broker)
}

func tableTypedOf[T any](mk func() T) tableTyped {
	return tableTyped{
		subscribe: func(b *topic.Broker) (func() int, func()) {
			ch, cancel := b.Subscribe(topic.Buffer[T](1<<14), topic.Name[T]("t"))
			return func() int { return len(ch) }, cancel
		},
		publish: func(b *topic.Broker) { b.Publish(mk()) },
	}
}

var tableTypes = []tableTyped{
	tableTypedOf(func() tableT0 { return tableT0{} }),
	tableTypedOf(func() tableT1 { return tableT1{} }),
	tableTypedOf(func() tableT2 { return tableT2{} }),
	tableTypedOf(func() tableT3 { return tableT3{} }),
	tableTypedOf(func() tableT4 { return tableT4{} }),
	tableTypedOf(func() tableT5 { return tableT5{} }),
	tableTypedOf(func() tableT6 { return tableT6{} }),
	tableTypedOf(func() tableT7 { return tableT7{} }),
	tableTypedOf(func() tableT8 { return tableT8{} }),
	tableTypedOf(func() tableT9 { return tableT9{} }),
	tableTypedOf(func() tableT10 { return tableT10{} }),
	tableTypedOf(func() tableT11 { return tableT11{} }),
	tableTypedOf(func() tableT12 { return tableT12{} }),
	tableTypedOf(func() tableT13 { return tableT13{} }),
	tableTypedOf(func() tableT14 { return tableT14{} }),
	tableTypedOf(func() tableT15 { return tableT15{} }),
	tableTypedOf(func() tableT16 { return tableT16{} }),
	tableTypedOf(func() tableT17 { return tableT17{} }),
	tableTypedOf(func() tableT18 { return tableT18{} }),
	tableTypedOf(func() tableT19 { return tableT19{} }),
	tableTypedOf(func() tableT20 { return tableT20{} }),
	tableTypedOf(func() tableT21 { return tableT21{} }),
	tableTypedOf(func() tableT22 { return tableT22{} }),
	tableTypedOf(func() tableT23 { return tableT23{} }),
	tableTypedOf(func() tableT24 { return tableT24{} }),
	tableTypedOf(func() tableT25 { return tableT25{} }),
	tableTypedOf(func() tableT26 { return tableT26{} }),
	tableTypedOf(func() tableT27 { return tableT27{} }),
	tableTypedOf(func() tableT28 { return tableT28{} }),
	tableTypedOf(func() tableT29 { return tableT29{} }),
	tableTypedOf(func() tableT30 { return tableT30{} }),
	tableTypedOf(func() tableT31 { return tableT31{} }),
	tableTypedOf(func() tableT32 { return tableT32{} }),
	tableTypedOf(func() tableT33 { return tableT33{} }),
	tableTypedOf(func() tableT34 { return tableT34{} }),
	tableTypedOf(func() tableT35 { return tableT35{} }),
	tableTypedOf(func() tableT36 { return tableT36{} }),
	tableTypedOf(func() tableT37 { return tableT37{} }),
	tableTypedOf(func() tableT38 { return tableT38{} }),
	tableTypedOf(func() tableT39 { return tableT39{} }),
	tableTypedOf(func() tableT40 { return tableT40{} }),
	tableTypedOf(func() tableT41 { return tableT41{} }),
	tableTypedOf(func() tableT42 { return tableT42{} }),
	tableTypedOf(func() tableT43 { return tableT43{} }),
	tableTypedOf(func() tableT44 { return tableT44{} }),
	tableTypedOf(func() tableT45 { return tableT45{} }),
	tableTypedOf(func() tableT46 { return tableT46{} }),
	tableTypedOf(func() tableT47 { return tableT47{} }),
	tableTypedOf(func() tableT48 { return tableT48{} }),
	tableTypedOf(func() tableT49 { return tableT49{} }),
	tableTypedOf(func() tableT50 { return tableT50{} }),
	tableTypedOf(func() tableT51 { return tableT51{} }),
	tableTypedOf(func() tableT52 { return tableT52{} }),
	tableTypedOf(func() tableT53 { return tableT53{} }),
	tableTypedOf(func() tableT54 { return tableT54{} }),
	tableTypedOf(func() tableT55 { return tableT55{} }),
	tableTypedOf(func() tableT56 { return tableT56{} }),
	tableTypedOf(func() tableT57 { return tableT57{} }),
	tableTypedOf(func() tableT58 { return tableT58{} }),
	tableTypedOf(func() tableT59 { return tableT59{} }),
	tableTypedOf(func() tableT60 { return tableT60{} }),
	tableTypedOf(func() tableT61 { return tableT61{} }),
	tableTypedOf(func() tableT62 { return tableT62{} }),
	tableTypedOf(func() tableT63 { return tableT63{} }),
}

// Concrete types routed while publishers of them run, without interface
// subscriptions (no resolution under the lock): each insertion in place must
// be seen by every publication that starts after Subscribe returns.
func TestTableInsertionsAreSeenByLaterPublications(t *testing.T) {
	trials := 20
	if testing.Short() {
		trials = 8
	}
	for trial := range trials {
		var b topic.Broker
		// One subscription first, so that the table exists and grows in
		// place and by doubling while the publishers run.
		b.Subscribe[valK]()
		var subscribed [64]atomic.Bool
		var after [64]atomic.Int64
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for p := range 3 {
			wg.Go(func() {
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					default:
					}
					i := (k*7 + p) % len(tableTypes)
					was := subscribed[i].Load()
					tableTypes[i].publish(&b)
					if was {
						after[i].Add(1)
					}
				}
			})
		}
		counts := make([]func() int, len(tableTypes))
		for i, ty := range tableTypes {
			counts[i], _ = ty.subscribe(&b)
			subscribed[i].Store(true)
			if i%8 == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
		time.Sleep(2 * time.Millisecond)
		close(stop)
		wg.Wait()
		var lost [64]uint64
		for _, st := range b.Subscriptions() {
			for i := range tableTypes {
				if st.Name == "t" && st.Type.Name() == fmt.Sprintf("tableT%d", i) {
					lost[i] = st.Lost.Total()
				}
			}
		}
		for i := range tableTypes {
			if got := int64(counts[i]()) + int64(lost[i]); got < after[i].Load() {
				t.Errorf("trial %d: type %d: %d published after Subscribe returned, %d received or counted",
					trial, i, after[i].Load(), got)
			}
		}
	}
}
