package topicotel_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/topicotel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// benchSubs is the number of subscriptions of the collection benchmarks.
const benchSubs = 10000

// benchBroker returns a broker of benchSubs named subscriptions of one
// type, each of which holds one value and lost one: six points each (its
// count, queued, capacity, lost, matched and consumed), and the type's one.
func benchBroker(b *testing.B) *topic.Broker {
	br := new(topic.Broker)
	b.Cleanup(func() { br.Shutdown(context.Background()) })
	for i := range benchSubs {
		br.Subscribe(topic.Name[order](fmt.Sprint("client-", i)))
	}
	br.Publish(order{1})
	br.Publish(order{2})
	return br
}

// BenchmarkCollect is one collection by the SDK's manual reader of a broker
// of 10,000 subscriptions: the snapshots, the points added up and observed,
// and the SDK's aggregation of 60,001 points.
func BenchmarkCollect(b *testing.B) {
	br := benchBroker(b)
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	reg, err := topicotel.Register(br, mp)
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Unregister()
	var rm metricdata.ResourceMetrics
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Collect(context.Background(), &rm); err != nil {
			b.Fatal(err)
		}
	}
	if n := len(rm.ScopeMetrics[0].Metrics); n != 7 {
		b.Fatalf("%d instruments reported, want 7", n)
	}
}

// BenchmarkSnapshots is the floor of BenchmarkCollect: the broker's three
// snapshots alone, which each collection takes.
func BenchmarkSnapshots(b *testing.B) {
	br := benchBroker(b)
	b.ReportAllocs()
	for b.Loop() {
		if n := len(br.Subscriptions()); n != benchSubs {
			b.Fatalf("%d subscriptions, want %d", n, benchSubs)
		}
		br.Topics()
		br.Logs()
	}
}
