package topicotel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/topicotel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// printPoints collects r and prints the points of the package's
// instruments whose name has the prefix, one a line.
func printPoints(r *sdkmetric.ManualReader, prefix string) {
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if !strings.HasPrefix(m.Name, prefix) {
				continue
			}
			var pts []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				pts = d.DataPoints
			case metricdata.Gauge[int64]:
				pts = d.DataPoints
			}
			for _, p := range pts {
				lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value))
			}
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
}

// Register reports a broker to a MeterProvider; each collection reads the
// broker afresh. Here a reader of the SDK collects by hand.
func ExampleRegister() {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	reg, err := topicotel.Register(&b, provider)
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	b.Handle(func(context.Context, string) error { return errors.New("refused") },
		topic.Name[string]("mailer"), topic.Buffer[string](4))
	b.Publish("hello")
	b.Publish("world")
	b.Settle(context.Background())
	printPoints(reader, "topic.")
	// Output:
	// topic.handler.dead_lettered{topic.subscription.name=mailer,topic.type=string} 0
	// topic.handler.handled{topic.subscription.name=mailer,topic.type=string} 0
	// topic.handler.retried{topic.subscription.name=mailer,topic.type=string} 0
	// topic.subscription.capacity{topic.subscription.name=mailer,topic.type=string} 4
	// topic.subscription.count{topic.subscription.name=mailer,topic.type=string} 1
	// topic.subscription.lost{topic.cause=errored,topic.subscription.name=mailer,topic.type=string} 2
	// topic.subscription.matched{topic.subscription.name=mailer,topic.type=string} 2
	// topic.subscription.queued{topic.subscription.name=mailer,topic.type=string} 0
}

// Attributes tells apart brokers registered on one MeterProvider, which
// refuses a second registration with the same attributes (ErrRegistered):
// their points would be added up.
func ExampleAttributes() {
	var orders, prices topic.Broker
	defer orders.Shutdown(context.Background())
	defer prices.Shutdown(context.Background())
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	reg, err := topicotel.Register(&orders, provider, topicotel.Attributes(attribute.String("broker", "orders")))
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()
	_, err = topicotel.Register(&prices, provider, topicotel.Attributes(attribute.String("broker", "orders")))
	fmt.Println(err)
	reg, err = topicotel.Register(&prices, provider, topicotel.Attributes(attribute.String("broker", "prices")))
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	orders.Subscribe[int]()
	prices.Subscribe[int]()
	prices.Subscribe[int]()
	printPoints(reader, "topic.subscription.count")
	// Output:
	// topicotel: a registration with these attributes is already on this MeterProvider
	// topic.subscription.count{broker=orders,topic.subscription.name=,topic.type=int} 1
	// topic.subscription.count{broker=prices,topic.subscription.name=,topic.type=int} 2
}

// Options are given to Register; the zero Option does nothing, and of two
// of a kind the last wins.
func ExampleOption() {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	opts := []topicotel.Option{
		topicotel.Attributes(attribute.String("env", "test")),
		{},
		topicotel.Attributes(attribute.String("env", "prod"), attribute.String("region", "eu")),
	}
	reg, err := topicotel.Register(&b, provider, opts...)
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()
	b.Subscribe[int]()
	printPoints(reader, "topic.subscription.count")
	// Output:
	// topic.subscription.count{env=prod,region=eu,topic.subscription.name=,topic.type=int} 1
}
