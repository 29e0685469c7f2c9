package topicotel_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/topicotel"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// A nil broker is the program's mistake: Register panics, saying so.
func TestRegisterPanicsOnANilBroker(t *testing.T) {
	mp, _ := newProvider(t)
	defer func() {
		msg, _ := recover().(string)
		if !strings.HasPrefix(msg, "topicotel: ") || !strings.Contains(msg, "nil broker") {
			t.Errorf("Register(nil, ...) panicked with %q", msg)
		}
	}()
	topicotel.Register(nil, mp)
	t.Error("Register of a nil broker did not panic")
}

// A second registration on a provider with the same attributes, of the same
// broker or another, is refused with ErrRegistered, and allowed once the
// first is unregistered; other attributes or another provider register. An
// Unregister is idempotent, and the broker has no points after it.
func TestRegisteringTwiceIsRefused(t *testing.T) {
	var b, other topic.Broker
	shutdown(t, &b)
	shutdown(t, &other)
	b.Subscribe[int]()
	mp, r := newProvider(t)
	reg, err := topicotel.Register(&b, mp)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := topicotel.Register(&b, mp); !errors.Is(err, topicotel.ErrRegistered) || again != nil {
		t.Errorf("the same broker again: %v, %v; want ErrRegistered", again, err)
	}
	if _, err := topicotel.Register(&other, mp); !errors.Is(err, topicotel.ErrRegistered) {
		t.Errorf("another broker with the same attributes: %v; want ErrRegistered", err)
	}
	if _, err := topicotel.Register(&b, mp, topicotel.Attributes()); !errors.Is(err, topicotel.ErrRegistered) {
		t.Errorf("empty Attributes, the same as none: %v; want ErrRegistered", err)
	}
	diff(t, collect(t, r), subPoints("int", "", 1, 0, 1)) // once, not added up

	register(t, &other, mp, topicotel.Attributes(attribute.String("broker", "other")))
	mp2, r2 := newProvider(t)
	register(t, &b, mp2)
	diff(t, collect(t, r2), subPoints("int", "", 1, 0, 1))

	for range 2 {
		if err := reg.Unregister(); err != nil {
			t.Fatal(err)
		}
	}
	diff(t, collect(t, r), reading{}) // other has no subscription
	register(t, &b, mp)
	diff(t, collect(t, r), subPoints("int", "", 1, 0, 1))
}

// After Shutdown the points are the final counts, Closed included, and
// there are no log points; the registration keeps working, and a broker
// shut down may be registered.
func TestAShutDownBrokerReportsItsFinalCounts(t *testing.T) {
	var b topic.Broker
	mp, r := newProvider(t)
	register(t, &b, mp)
	b.Retain[price](topic.Retention{Count: 4})
	b.Subscribe(topic.Buffer[price](4), topic.Name[price]("prices"))
	started := make(chan struct{})
	b.Handle(func(ctx context.Context, o order) error {
		if o.ID == 0 {
			close(started)
		}
		<-ctx.Done() // cancelled by the Shutdown cut short
		return ctx.Err()
	}, topic.Name[order]("slow"), topic.Buffer[order](8))
	b.Publish(price{1})
	for i := range 3 {
		b.Publish(order{i})
	}
	<-started
	const typ = "topicotel_test.price"
	got := collect(t, r)
	// The handler's own counts are published when its queue is empty, or
	// every 64 values: not yet. Its subscription's are.
	maps.DeleteFunc(got, func(k string, _ int64) bool { return strings.HasPrefix(k, "topic.handler.") })
	diff(t, got, merge(
		subPoints(typ, "prices", 1, 1, 4),
		reading{
			logPoint("topic.log.appended", typ, false): 1,
			logPoint("topic.log.oldest", typ, false):   0,
			logPoint("topic.log.kept", typ, false):     1,
		},
		subPoints("topicotel_test.order", "slow", 1, 2, 8),
	))

	cut, cancel := context.WithCancel(context.Background())
	cancel()
	// Cut short: the handler discards the value in hand and its queue.
	// Shutdown's error is not checked: the drain may find the handler
	// quiescent once it has discarded, and report nil.
	b.Shutdown(cut)
	b.Shutdown(context.Background()) // waits for the handler to end
	b.Publish(price{2})              // counted Closed
	final := merge(
		subPoints(typ, "prices", 1, 1, 4, topic.Closed, 1),
		subPoints("topicotel_test.order", "slow", 1, 0, 8, topic.Discarded, 3),
		reading{
			sub("topic.handler.handled", "topicotel_test.order", "slow"):       0,
			sub("topic.handler.retried", "topicotel_test.order", "slow"):       0,
			sub("topic.handler.dead_lettered", "topicotel_test.order", "slow"): 0,
		},
	)
	diff(t, collect(t, r), final)
	diff(t, collect(t, r), final)

	mp2, r2 := newProvider(t)
	register(t, &b, mp2)
	diff(t, collect(t, r2), final)
}

// A nil MeterProvider is the global one. The test sets the global provider,
// so it must not run in parallel; it leaves a no-op one.
func TestANilMeterProviderIsTheGlobalOne(t *testing.T) {
	mp, r := newProvider(t)
	otel.SetMeterProvider(mp)
	t.Cleanup(func() { otel.SetMeterProvider(noop.NewMeterProvider()) })
	var b topic.Broker
	shutdown(t, &b)
	b.Subscribe[int]()
	reg, err := topicotel.Register(&b, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	diff(t, collect(t, r), subPoints("int", "", 1, 0, 1))
	if _, err := topicotel.Register(&b, otel.GetMeterProvider()); !errors.Is(err, topicotel.ErrRegistered) {
		t.Errorf("Register on the global provider after Register on nil: %v; want ErrRegistered", err)
	}
}

// A MeterProvider that is not comparable (a struct holding a function)
// cannot be told from another, so each Register of it registers.
type funcProvider struct {
	noop.MeterProvider
	f func()
}

func TestANonComparableMeterProviderIsNotChecked(t *testing.T) {
	var b topic.Broker
	shutdown(t, &b)
	mp := funcProvider{f: func() {}}
	for range 2 {
		reg, err := topicotel.Register(&b, mp)
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
	}
}

// A meter whose instruments fail, and the provider of it.
type (
	failingProvider struct{ noop.MeterProvider }
	failingMeter    struct{ noop.Meter }
)

var errRefused = errors.New("refused")

func (*failingProvider) Meter(string, ...metric.MeterOption) metric.Meter { return failingMeter{} }

func (failingMeter) Int64ObservableGauge(string, ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	return nil, errRefused
}

// An instrument the meter fails to make is Register's error, and no
// registration is made: a second Register fails the same way, not with
// ErrRegistered.
func TestAMeterErrorIsRegistersError(t *testing.T) {
	var b topic.Broker
	shutdown(t, &b)
	mp := new(failingProvider)
	for range 2 {
		if reg, err := topicotel.Register(&b, mp); !errors.Is(err, errRefused) || reg != nil {
			t.Errorf("Register = %v, %v; want the meter's error", reg, err)
		}
	}
}
