package topicotel_test

import (
	"context"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/topicotel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// A row is an instrument as the package documentation describes it.
type row struct {
	kind, unit string
	attrs      string // the keys of its attributes, sorted, separated by commas
}

// documented returns the rows of the instrument table of the package
// documentation, by name, each attribute named by its key in the
// attribute table.
func documented(t *testing.T) map[string]row {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	tables := make(map[string][][]string) // by the first word of the header
	var table string
	for line := range strings.Lines(string(src)) {
		f := strings.Fields(strings.TrimPrefix(line, "//\t"))
		switch {
		case !strings.HasPrefix(line, "//\t") || len(f) < 3:
			table = ""
		case table == "":
			table = f[0]
		default:
			tables[table] = append(tables[table], f)
		}
	}
	keys := make(map[string]string) // "type": "topic.type"; the conventions' by their full names
	for _, f := range tables["attribute"] {
		if strings.HasPrefix(f[0], "topic.") {
			keys[f[0][strings.LastIndex(f[0], ".")+1:]] = f[0]
		} else {
			keys[f[0]] = f[0]
		}
	}
	rows := make(map[string]row)
	for _, f := range tables["instrument"] {
		var attrs []string
		for _, a := range f[3:] {
			k, ok := keys[strings.TrimSuffix(a, ",")]
			if !ok {
				t.Fatalf("%s: attribute %q is not in the attribute table", f[0], a)
			}
			attrs = append(attrs, k)
			if !strings.HasSuffix(a, ",") {
				break
			}
		}
		slices.Sort(attrs)
		rows[f[0]] = row{f[1], f[2], strings.Join(attrs, ",")}
	}
	if len(rows) == 0 || len(keys) == 0 {
		t.Fatalf("doc.go has no instrument table or no attribute table: %v", tables)
	}
	return rows
}

// Every instrument reported is in the table of the package documentation,
// with its kind, unit and attributes, and has a description; every one of
// the table is reported by a broker that has every kind of subscription
// and a log.
func TestInstrumentsAreAsDocumented(t *testing.T) {
	var b topic.Broker
	shutdown(t, &b)
	mp, r := newProvider(t)
	register(t, &b, mp)
	b.Subscribe(topic.Buffer[int](0))
	b.Publish(1) // a lost point
	b.Handle(func(context.Context, order) error { return nil })
	b.Publish(order{1}) // a call of a handler's function
	if err := b.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.Retain[price](topic.Retention{Count: 1})
	f := b.Follow[price]()
	defer f.Close()

	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	want := documented(t)
	seen := make(map[string]bool)
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != topicotel.ScopeName {
			t.Errorf("a scope %q", sm.Scope.Name)
			continue
		}
		for _, m := range sm.Metrics {
			kind := "?"
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				kind = "UpDownCounter"
				if d.IsMonotonic {
					kind = "Counter"
				}
			case metricdata.Gauge[int64]:
				kind = "Gauge"
			case metricdata.Histogram[float64]:
				kind = "Histogram"
			}
			got := row{kind, m.Unit, attrsOf(m)}
			doc, ok := want[m.Name]
			switch {
			case !ok:
				t.Errorf("%s is not documented", m.Name)
			case got != doc:
				t.Errorf("%s is %+v, documented as %+v", m.Name, got, doc)
			case m.Description == "":
				t.Errorf("%s has no description", m.Name)
			}
			seen[m.Name] = true
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("%s is documented and was not reported", name)
		}
	}
}

// attrsOf returns the keys of the attributes of m's points, sorted,
// separated by commas; "?" if two points differ.
func attrsOf(m metricdata.Metrics) string {
	var sets []attribute.Set
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	}
	out := ""
	for i, set := range sets {
		var keys []string
		for _, kv := range set.ToSlice() {
			keys = append(keys, string(kv.Key))
		}
		if k := strings.Join(keys, ","); i == 0 {
			out = k
		} else if k != out {
			return "?"
		}
	}
	return out
}

// The causes reported are those of topic.Lost, in its order, and there is
// no other cause.
func TestEveryCauseIsReported(t *testing.T) {
	lost := reflect.TypeFor[topic.Lost]()
	if lost.NumField() != len(topicotel.Causes) {
		t.Fatalf("topic.Lost has %d counts, %d causes are reported", lost.NumField(), len(topicotel.Causes))
	}
	for i, c := range topicotel.Causes {
		if tag := lost.Field(i).Tag.Get("json"); tag != c.String() {
			t.Errorf("cause %d is %s, topic.Lost's field %d %s", i, c, i, tag)
		}
	}
	if next := topicotel.Causes[len(topicotel.Causes)-1] + 1; !strings.HasPrefix(next.String(), "Cause(") {
		t.Errorf("cause %s is not reported", next)
	}
}

// Collections of two readers run at once while subscriptions come and go
// and publications lose values, under the race detector; then a reading
// shows the counts that the broker's snapshot shows.
func TestConcurrentCollections(t *testing.T) {
	var b topic.Broker
	shutdown(t, &b)
	readers := []*sdkmetric.ManualReader{sdkmetric.NewManualReader(), sdkmetric.NewManualReader()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(readers[0]), sdkmetric.WithReader(readers[1]))
	defer mp.Shutdown(context.Background())
	register(t, &b, mp)
	rounds := 200
	if testing.Short() {
		rounds = 20
	}
	b.Subscribe(topic.Buffer[int](1), topic.Name[int]("kept"))
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range rounds {
			_, cancel := b.Subscribe(topic.Buffer[int](1))
			b.Publish(i)
			b.Publish(i)
			cancel()
		}
	})
	for _, r := range readers {
		wg.Go(func() {
			for range rounds {
				collect(t, r)
			}
		})
	}
	wg.Wait()
	diff(t, collect(t, readers[0]), subPoints("int", "kept", 1, 1, 1, topic.Full, 2*rounds-1))
}
