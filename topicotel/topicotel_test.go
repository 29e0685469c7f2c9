package topicotel_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/topicotel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

type (
	order      struct{ ID int }
	price      struct{ Cents int }
	quote      struct{ Symbol string }
	celsius    float64
	fahrenheit float64
)

// newProvider returns a MeterProvider of the SDK read by a manual reader,
// shut down at the end of the test.
func newProvider(t *testing.T) (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() {
		if err := mp.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return mp, r
}

// register registers b on mp, unregistered at the end of the test.
func register(t *testing.T, b *topic.Broker, mp *sdkmetric.MeterProvider, opts ...topicotel.Option) {
	t.Helper()
	reg, err := topicotel.Register(b, mp, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := reg.Unregister(); err != nil {
			t.Error(err)
		}
	})
}

// shutdown shuts b down at the end of the test.
func shutdown(t *testing.T, b *topic.Broker) {
	t.Cleanup(func() {
		if err := b.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

// A reading is one collection of the package's instruments: the value of
// each point (a histogram's: its count), by "instrument{attributes}", the
// attributes as the SDK encodes them (sorted by key, "k=v" separated by
// commas).
type reading map[string]int64

// collect collects r and returns the points of the package's scope.
func collect(t *testing.T, r *sdkmetric.ManualReader) reading {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := make(reading)
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != topicotel.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			add := func(set attribute.Set, v int64) {
				k := m.Name + "{" + set.Encoded(attribute.DefaultEncoder()) + "}"
				if _, dup := out[k]; dup {
					t.Errorf("two points %s", k)
				}
				out[k] = v
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if d.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s: temporality %v", m.Name, d.Temporality)
				}
				for _, p := range d.DataPoints {
					add(p.Attributes, p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					add(p.Attributes, p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints { // its count
					add(p.Attributes, int64(p.Count))
				}
			default:
				t.Errorf("%s: data of type %T", m.Name, m.Data)
			}
		}
	}
	return out
}

// sub names the point of instrument in of the subscriptions of type typ and
// name name, in a reading.
func sub(in, typ, name string) string {
	return in + "{topic.subscription.name=" + name + ",topic.type=" + typ + "}"
}

// lost names the point of cause c of the subscriptions of type typ and name
// name.
func lost(typ, name string, c topic.Cause) string {
	return "topic.subscription.lost{topic.cause=" + c.String() + ",topic.subscription.name=" + name + ",topic.type=" + typ + "}"
}

// logPoint names the point of instrument in of the log of type typ.
func logPoint(in, typ string, keyed bool) string {
	return fmt.Sprintf("%s{topic.log.keyed=%t,topic.type=%s}", in, keyed, typ)
}

// subPoints returns the points of a channel subscription: its count, queued
// and capacity, and a lost point for each cause of losses, given as
// pairs of a cause and a count.
func subPoints(typ, name string, count, queued, capacity int64, losses ...any) reading {
	r := reading{
		sub("topic.subscription.count", typ, name):    count,
		sub("topic.subscription.queued", typ, name):   queued,
		sub("topic.subscription.capacity", typ, name): capacity,
	}
	for i := 0; i < len(losses); i += 2 {
		r[lost(typ, name, losses[i].(topic.Cause))] = int64(losses[i+1].(int))
	}
	return r
}

// merge merges readings.
func merge(rs ...reading) reading {
	out := make(reading)
	for _, r := range rs {
		maps.Copy(out, r)
	}
	return out
}

// flow reports whether k is a point of the instruments that count the
// flow of messages: the messaging conventions' sent and consumed, and
// topic.subscription.matched; process, of the histogram of handler calls.
func flow(k string) bool {
	return strings.HasPrefix(k, "messaging.client.") || strings.HasPrefix(k, "topic.subscription.matched{")
}

func process(k string) bool { return strings.HasPrefix(k, "messaging.process.duration{") }

// diff fails t with the points of got and want that differ. Unless want
// has a point of the flow instruments, it compares the others only, and
// the same for the histogram of handler calls: the tests of these say
// what they are (TestTheFlowFollowsTheMessagingConventions,
// TestHandlerCallsAreTimed).
func diff(t *testing.T, got, want reading) {
	t.Helper()
	for _, group := range []func(string) bool{flow, process} {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(want)), group) {
			got = maps.Clone(got)
			maps.DeleteFunc(got, func(k string, _ int64) bool { return group(k) })
		}
	}
	keys := slices.Sorted(maps.Keys(merge(got, want)))
	var b strings.Builder
	for _, k := range keys {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			fmt.Fprintf(&b, "\n\tmissing %s = %d", k, w)
		case !wok:
			fmt.Fprintf(&b, "\n\tunexpected %s = %d", k, g)
		case g != w:
			fmt.Fprintf(&b, "\n\t%s = %d, want %d", k, g, w)
		}
	}
	if b.Len() > 0 {
		t.Errorf("the reading differs:%s", b.String())
	}
}

// A channel subscription has its count, queued values and capacity, and a
// lost point for each cause that counted a value: a full buffer, an
// eviction, a From function that panicked.
func TestChannelSubscriptionsReportLossesByCause(t *testing.T) {
	var b topic.Broker
	shutdown(t, &b)
	mp, r := newProvider(t)
	register(t, &b, mp)

	b.Subscribe(topic.Buffer[int](1), topic.Name[int]("dashboard"))
	b.Subscribe(topic.Buffer[string](2), topic.Overflow[string](topic.DropOldest), topic.Name[string]("latest"))
	b.Subscribe(topic.Buffer[fahrenheit](4), topic.From(func(celsius) (fahrenheit, bool) { panic("no conversion") }))
	for i := range 3 {
		b.Publish(i)
	}
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		b.Publish(s)
	}
	b.Publish(celsius(20))
	b.Publish(fahrenheit(68))

	diff(t, collect(t, r), merge(
		subPoints("int", "dashboard", 1, 1, 1, topic.Full, 2),
		subPoints("string", "latest", 1, 2, 2, topic.Evicted, 3),
		subPoints("topicotel_test.fahrenheit", "", 1, 1, 4, topic.Failed, 1),
	))
}

// Each collection takes a fresh snapshot: counts move between collections,
// and the point of a subscription that ended is not reported again.
func TestEachCollectionIsFresh(t *testing.T) {
	var b topic.Broker
	shutdown(t, &b)
	mp, r := newProvider(t)
	register(t, &b, mp)

	diff(t, collect(t, r), reading{})
	ch, cancel := b.Subscribe(topic.Buffer[int](2))
	b.Subscribe(topic.Buffer[int](1), topic.Name[int]("kept"))
	b.Publish(1)
	diff(t, collect(t, r), merge(subPoints("int", "", 1, 1, 2), subPoints("int", "kept", 1, 1, 1)))
	<-ch
	b.Publish(2)
	b.Publish(3)
	diff(t, collect(t, r), merge(subPoints("int", "", 1, 2, 2), subPoints("int", "kept", 1, 1, 1, topic.Full, 2)))
	cancel()
	diff(t, collect(t, r), subPoints("int", "kept", 1, 1, 1, topic.Full, 2))
}

// A handler's points add its counts: values accepted, handled, retried and
// dead-lettered, and its losses as a subscription's (Errored for an
// at-most-once function's failures).
func TestHandlersReportTheirCounts(t *testing.T) {
	var b topic.Broker
	shutdown(t, &b)
	mp, r := newProvider(t)
	register(t, &b, mp)

	fail := errors.New("declined")
	b.Handle(func(context.Context, order) error { return fail },
		topic.Name[order]("billing"), topic.Buffer[order](8),
		topic.Retry[order](topic.RetryPolicy{Attempts: 3})) // Base 0: retries at once
	b.Handle(func(context.Context, order) error { return fail },
		topic.Name[order]("audit"), topic.Buffer[order](8)) // at most once
	b.Handle(func(_ context.Context, o order) error {
		if o.ID == 2 {
			return topic.Permanent(fail) // dead-lettered at the first attempt
		}
		return nil
	}, topic.Name[order]("shipping"), topic.Buffer[order](8), topic.Retry[order](topic.RetryPolicy{Attempts: 3}))
	dead, cancel := b.Subscribe(topic.Buffer[topic.DeadLetter[order]](8), topic.Name[topic.DeadLetter[order]]("dead"))
	defer cancel()
	for i := range 3 {
		b.Publish(order{i})
	}
	if err := b.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(dead) != 4 {
		t.Fatalf("%d dead letters, want 3 of billing and 1 of shipping", len(dead))
	}

	const typ = "topicotel_test.order"
	const deadTyp = "topic.DeadLetter[github.com/seedaa7df82c/topic/topicotel_test.order]" // as reflect prints it
	// A handler's values consumed are those its goroutine took.
	handler := func(name string, accepted, handled, retried, deadLettered int64) reading {
		return reading{
			consumed(typ, name):                           accepted,
			sub("topic.subscription.matched", typ, name):  3,
			sub("topic.handler.handled", typ, name):       handled,
			sub("topic.handler.retried", typ, name):       retried,
			sub("topic.handler.dead_lettered", typ, name): deadLettered,
		}
	}
	diff(t, collect(t, r), merge(
		subPoints(typ, "billing", 1, 0, 8), handler("billing", 3, 0, 6, 3),
		subPoints(typ, "audit", 1, 0, 8, topic.Errored, 3), handler("audit", 3, 0, 0, 0),
		subPoints(typ, "shipping", 1, 0, 8), handler("shipping", 3, 2, 0, 1),
		subPoints(deadTyp, "dead", 1, 4, 8),
		reading{
			consumed(deadTyp, "dead"):                          4, // in its channel
			sub("topic.subscription.matched", deadTyp, "dead"): 4,
			sent(typ):     3,
			sent(deadTyp): 4, // 3 of billing, 1 of shipping
		},
	))
}

// sent names the point of messaging.client.sent.messages of type typ.
func sent(typ string) string {
	return "messaging.client.sent.messages{messaging.destination.name=" + typ +
		",messaging.operation.name=publish,messaging.operation.type=send,messaging.system=topic}"
}

// consumed names the point of messaging.client.consumed.messages of the
// subscriptions of type typ and name name.
func consumed(typ, name string) string {
	return "messaging.client.consumed.messages{messaging.destination.name=" + typ +
		",messaging.destination.subscription.name=" + name +
		",messaging.operation.name=receive,messaging.operation.type=receive,messaging.system=topic}"
}

// A follower of a retained type reports its offset, committed offset and
// lag, and the values retention trimmed before it read them (Skipped); the
// log reports the values appended, the oldest offset and the values kept,
// keyed or not.
func TestFollowersAndLogsReportTheirPositions(t *testing.T) {
	var b topic.Broker
	shutdown(t, &b)
	mp, r := newProvider(t)
	register(t, &b, mp)

	b.Retain[price](topic.Retention{Count: 3})
	b.RetainLatest(func(q quote) string { return q.Symbol }, topic.Retention{Count: 10})
	f := b.Follow(topic.Replay[price](topic.Earliest()), topic.Name[price]("billing"))
	defer f.Close()
	for i := range 5 {
		b.Publish(price{i})
	}
	for _, s := range []string{"A", "B", "A"} {
		b.Publish(quote{s})
	}

	const typ = "topicotel_test.price"
	follower := func(offset, committed, lag int64) reading {
		return reading{
			sub("topic.follower.offset", typ, "billing"):    offset,
			sub("topic.follower.committed", typ, "billing"): committed,
			sub("topic.follower.lag", typ, "billing"):       lag,
		}
	}
	logs := merge(
		reading{
			logPoint("topic.log.appended", typ, false): 5,
			logPoint("topic.log.oldest", typ, false):   2,
			logPoint("topic.log.kept", typ, false):     3,
		},
		reading{ // A at 2 and B at 1: the first A was replaced
			logPoint("topic.log.appended", "topicotel_test.quote", true): 3,
			logPoint("topic.log.oldest", "topicotel_test.quote", true):   1,
			logPoint("topic.log.kept", "topicotel_test.quote", true):     2,
		},
	)
	// Not read yet: at 0, behind by the 3 values kept.
	diff(t, collect(t, r), merge(subPoints(typ, "billing", 1, 3, 0), follower(0, 0, 3), logs))

	buf := make([]topic.Record[price], 8)
	if n := f.Read(buf); n != 3 || buf[0].Skipped != 2 {
		t.Fatalf("read %d records, the first after %d skipped; want 3 after 2", n, buf[0].Skipped)
	}
	f.Commit(3) // the offsets below 4 are committed
	diff(t, collect(t, r), merge(subPoints(typ, "billing", 1, 0, 0, topic.Skipped, 2), follower(5, 4, 0), logs))
}

// Subscriptions of one type and name make one point: the counts added, the
// number of subscriptions in its count, a follower's offsets the least of
// them.
func TestSameTypeAndNameMakeOnePoint(t *testing.T) {
	var b topic.Broker
	shutdown(t, &b)
	mp, r := newProvider(t)
	register(t, &b, mp)

	b.Subscribe(topic.Buffer[int](1))
	b.Subscribe(topic.Buffer[int](2))
	for i := range 3 {
		b.Publish(i)
	}
	b.Retain[price](topic.Retention{Count: 10})
	ahead := b.Follow(topic.Replay[price](topic.Earliest()))
	defer ahead.Close()
	behind := b.Follow(topic.Replay[price](topic.Earliest()))
	defer behind.Close()
	for i := range 4 {
		b.Publish(price{i})
	}
	buf := make([]topic.Record[price], 3)
	ahead.Read(buf)
	ahead.Commit(2)
	behind.Read(buf[:1])

	const typ = "topicotel_test.price"
	diff(t, collect(t, r), merge(
		subPoints("int", "", 2, 1+2, 1+2, topic.Full, 2+1),
		subPoints(typ, "", 2, 1+3, 0),
		reading{
			sub("topic.follower.offset", typ, ""):    1,
			sub("topic.follower.committed", typ, ""): 0,
			sub("topic.follower.lag", typ, ""):       1 + 3,
		},
		reading{
			logPoint("topic.log.appended", typ, false): 4,
			logPoint("topic.log.oldest", typ, false):   0,
			logPoint("topic.log.kept", typ, false):     4,
		},
	))
}

// Attributes adds its attributes to every point, the last of a key kept;
// the last Attributes wins, the zero Option does nothing, and the package's
// own attributes replace one of the same key.
func TestAttributesAreAddedToEveryPoint(t *testing.T) {
	var b topic.Broker
	shutdown(t, &b)
	mp, r := newProvider(t)
	register(t, &b, mp,
		topicotel.Attributes(attribute.String("broker", "replaced")),
		topicotel.Option{},
		topicotel.Attributes(attribute.String("broker", "first"), attribute.String("topic.type", "not the type"), attribute.String("broker", "orders")),
	)
	b.Subscribe(topic.Buffer[int](0))
	b.Publish(1)
	b.Retain[price](topic.Retention{Count: 1})

	diff(t, collect(t, r), reading{
		"topic.subscription.count{broker=orders,topic.subscription.name=,topic.type=int}":                 1,
		"topic.subscription.queued{broker=orders,topic.subscription.name=,topic.type=int}":                0,
		"topic.subscription.capacity{broker=orders,topic.subscription.name=,topic.type=int}":              0,
		"topic.subscription.lost{broker=orders,topic.cause=full,topic.subscription.name=,topic.type=int}": 1,
		"topic.log.appended{broker=orders,topic.log.keyed=false,topic.type=topicotel_test.price}":         0,
		"topic.log.oldest{broker=orders,topic.log.keyed=false,topic.type=topicotel_test.price}":           0,
		"topic.log.kept{broker=orders,topic.log.keyed=false,topic.type=topicotel_test.price}":             0,
	})
}

// Attributes keeps its own copy: the caller's slice is neither reordered
// nor read again.
func TestAttributesCopiesItsArguments(t *testing.T) {
	kv := []attribute.KeyValue{attribute.String("z", "1"), attribute.String("a", "2")}
	opt := topicotel.Attributes(kv...)
	if kv[0].Key != "z" || kv[1].Key != "a" {
		t.Errorf("Attributes reordered its argument: %v", kv)
	}
	kv[0] = attribute.String("z", "changed")
	var b topic.Broker
	shutdown(t, &b)
	mp, r := newProvider(t)
	register(t, &b, mp, opt)
	b.Subscribe[int]()
	if got := collect(t, r); got["topic.subscription.count{a=2,topic.subscription.name=,topic.type=int,z=1}"] != 1 {
		t.Errorf("the reading is %v", got)
	}
}

// The flow of messages follows the messaging semantic conventions: the
// publications of each type that found a subscription are sent messages,
// what each subscription was delivered is consumed messages; and
// topic.subscription.matched counts what reached it, of which its losses
// are a share. The meter carries the conventions' schema URL.
func TestTheFlowFollowsTheMessagingConventions(t *testing.T) {
	var b topic.Broker
	shutdown(t, &b)
	mp, r := newProvider(t)
	register(t, &b, mp)
	b.Subscribe(topic.Name[price]("small"), topic.Buffer[price](2))
	b.Subscribe(topic.Name[string]("even"), topic.Buffer[string](8),
		topic.From(func(p price) (string, bool) { return "", p.Cents%2 == 0 }))
	b.Subscribe(topic.Name[any]("all"), topic.Buffer[any](16))
	b.Retain[order](topic.Retention{Count: 8})
	f := b.Follow(topic.Name[order]("orders"))
	defer f.Close()
	for i := range 6 {
		b.Publish(price{i})
	}
	b.Publish(order{1})
	b.Publish(order{2})
	f.Read(make([]topic.Record[order], 1)) // one of two read
	b.Publish(quote{"X"})                  // for all alone

	const p, o = "topicotel_test.price", "topicotel_test.order"
	matched := func(typ, name string) string { return sub("topic.subscription.matched", typ, name) }
	diff(t, collect(t, r), merge(
		subPoints(p, "small", 1, 2, 2, topic.Full, 4),
		subPoints("string", "even", 1, 3, 8),
		subPoints("interface {}", "all", 1, 9, 16),
		subPoints(o, "orders", 1, 1, 0),
		reading{
			sent(p):                                      6,
			sent(o):                                      2,
			sent("topicotel_test.quote"):                 1,
			sent("string"):                               0, // routed, for even, never published
			consumed(p, "small"):                         2,
			matched(p, "small"):                          6,
			consumed("string", "even"):                   3, // 3 rejected
			matched("string", "even"):                    6,
			consumed("interface {}", "all"):              9, // every price, order and quote
			matched("interface {}", "all"):               9,
			consumed(o, "orders"):                        1, // read
			matched(o, "orders"):                         1,
			sub("topic.follower.offset", o, "orders"):    1,
			sub("topic.follower.committed", o, "orders"): 0,
			sub("topic.follower.lag", o, "orders"):       1,
			logPoint("topic.log.appended", o, false):     2,
			logPoint("topic.log.oldest", o, false):       0,
			logPoint("topic.log.kept", o, false):         2,
		},
	))

	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.SchemaURL != "https://opentelemetry.io/schemas/1.43.0" {
			t.Errorf("the scope's schema URL is %q", sm.Scope.SchemaURL)
		}
		for _, m := range sm.Metrics {
			if strings.HasPrefix(m.Name, "messaging.") && (m.Unit != "{message}" || m.Description == "") {
				t.Errorf("%s: unit %q, description %q", m.Name, m.Unit, m.Description)
			}
		}
	}
}

// Each call of a handler's function is recorded in the messaging
// conventions' histogram messaging.process.duration, in seconds, with
// error.type for a failure: the error's type, or "panic"; and no longer
// once the registration is gone.
func TestHandlerCallsAreTimed(t *testing.T) {
	var b topic.Broker
	shutdown(t, &b)
	mp, r := newProvider(t)
	reg, err := topicotel.Register(&b, mp)
	if err != nil {
		t.Fatal(err)
	}
	b.Handle(func(_ context.Context, o order) error {
		switch o.ID {
		case 1:
			time.Sleep(20 * time.Millisecond)
		case 2:
			return errors.New("refused")
		case 3:
			panic("three")
		}
		return nil
	}, topic.Name[order]("billing"), topic.Buffer[order](8))
	for id := range 4 {
		b.Publish(order{id})
	}
	if err := b.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	at := func(errType string) string {
		e := ""
		if errType != "" {
			e = "error.type=" + errType + ","
		}
		return "messaging.process.duration{" + e + "messaging.destination.name=topicotel_test.order," +
			"messaging.destination.subscription.name=billing,messaging.operation.name=process,messaging.operation.type=process,messaging.system=topic}"
	}
	got := collect(t, r)
	want := reading{at(""): 2, at("*errors.errorString"): 1, at("panic"): 1}
	for k := range got {
		if !process(k) {
			delete(got, k)
		}
	}
	diff(t, got, want)

	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok {
				continue
			}
			if m.Unit != "s" {
				t.Errorf("%s: unit %q, want s", m.Name, m.Unit)
			}
			for _, p := range h.DataPoints {
				if e, _ := p.Attributes.Value("error.type"); e.AsString() == "" && p.Sum < 0.020 {
					t.Errorf("the successful calls took %v s in all, want the 20 ms one's at least", p.Sum)
				}
			}
		}
	}

	// Unregistered, the calls are no longer recorded.
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	b.Publish(order{0})
	if err := b.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	got = collect(t, r)
	for k := range got {
		if !process(k) {
			delete(got, k)
		}
	}
	diff(t, got, want)
}
