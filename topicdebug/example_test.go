package topicdebug_test

import (
	"context"
	"encoding/json"
	"expvar"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"time"

	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/topicdebug"
)

// Publish puts a broker on /debug/vars, once per program (expvar names are
// the process's), which any program serving http.DefaultServeMux (or
// expvar.Handler) then shows. Not run, since it would publish the name
// again under go test -count=2; TestPublishServesDebugVars runs it.
func ExamplePublish() {
	var b topic.Broker
	topicdebug.Publish("broker", &b)
	b.Subscribe(topic.Buffer[int](1), topic.Name[int]("ticks"))
	b.Publish(1)
	b.Publish(2) // lost: the buffer holds one

	fmt.Println(expvar.Get("broker"))
	// prints:
	// {"subscriptions":[{"type":"int","name":"ticks","policy":"drop-newest","capacity":1,"queued":1,"lost":{"full":1,...}}],"lost":{"full":1,...}}
}

// Var is the same Var, for a program that publishes it itself, or nests it
// in an expvar.Map.
func ExampleVar() {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	brokers := new(expvar.Map)
	brokers.Set("orders", topicdebug.Var(&b))
	fmt.Println(brokers)
	// Output:
	// {"orders": {"subscriptions":[],"lost":{"full":0,"evicted":0,"failed":0,"errored":0,"discarded":0,"closed":0,"skipped":0},"topics":[],"logs":[],"shutdown":false}}
}

// Take is the snapshot itself, for a program's own report.
func ExampleTake() {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	b.Subscribe(topic.Buffer[string](0))
	b.Publish("nobody is receiving")
	s := topicdebug.Take(&b)
	fmt.Println(len(s.Subscriptions), "subscription, lost:", s.Lost.Total())
	// Output:
	// 1 subscription, lost: 1
}

// A Snapshot's fields: the subscriptions, and the losses of all of them.
func ExampleSnapshot() {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	b.Subscribe(topic.Name[int]("a"))
	b.Subscribe(topic.Name[int]("b"))
	for _, st := range topicdebug.Take(&b).Subscriptions {
		fmt.Println(st.Type, st.Name)
	}
	// Output:
	// int a
	// int b
}

// Handler serves the page at a path ending in a slash and the snapshot it
// polls at snapshot.json beside it, wherever it is mounted. Here a
// ServeMux mounts it at /debug/topic/, and a recorder stands in for the
// browser.
func ExampleHandler() {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	b.Subscribe(topic.Buffer[int](1), topic.Name[int]("ticks"))
	b.Publish(1)
	b.Publish(2) // lost: the buffer holds one

	mux := http.NewServeMux()
	mux.Handle("/debug/topic/", topicdebug.Handler(&b))

	var body fmt.Stringer
	for _, target := range []string{"/debug/topic/", "/debug/topic/snapshot.json"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		fmt.Println(target, rec.Code, rec.Header().Get("Content-Type"))
		body = rec.Body
	}
	fmt.Println(body)
	// Output:
	// /debug/topic/ 200 text/html; charset=utf-8
	// /debug/topic/snapshot.json 200 application/json
	// {"subscriptions":[{"type":"int","name":"ticks","policy":"drop-newest","capacity":1,"queued":1,"lost":{"full":1,"evicted":0,"failed":0,"errored":0,"discarded":0,"closed":0,"skipped":0},"sent":1,"rejected":0,"matched":2,"made":"github.com/seedaa7df82c/topic/topicdebug_test/example_test.go:78"}],"lost":{"full":1,"evicted":0,"failed":0,"errored":0,"discarded":0,"closed":0,"skipped":0},"topics":[{"type":"int","published":2,"retained":false,"reaches":[{"type":"int","name":"ticks","made":"github.com/seedaa7df82c/topic/topicdebug_test/example_test.go:78","via":"int","from":false}]}],"logs":[],"shutdown":false}
}

// An Incident is one of the last incidents a Handler keeps for its page:
// what a subscription lost in one interval of the broker's Watch, out of
// what reached it then, and when.
func ExampleIncident() {
	i := topicdebug.Incident{
		At:       time.Date(2026, 12, 6, 10, 0, 1, 0, time.UTC),
		Incident: topic.Incident{Name: "billing", Lost: topic.Lost{Full: 30}, Matched: 40},
	}
	fmt.Printf("%s %s lost %d of %d\n", i.At.Format(time.TimeOnly), i.Name, i.Lost.Total(), i.Matched)
	// Output:
	// 10:00:01 billing lost 30 of 40
}

func ExampleIncident_MarshalJSON() {
	i := topicdebug.Incident{
		At: time.Date(2026, 12, 6, 10, 0, 1, 0, time.UTC),
		Incident: topic.Incident{Type: reflect.TypeFor[int](), Name: "ticks",
			Lost: topic.Lost{Full: 30}, Matched: 40, Made: "example.com/shop/ticks.go:12"},
	}
	out, _ := json.Marshal(i)
	fmt.Println(string(out))
	// Output:
	// {"at":"2026-12-06T10:00:01Z","type":"int","name":"ticks","lost":{"full":30,"evicted":0,"failed":0,"errored":0,"discarded":0,"closed":0,"skipped":0},"matched":40,"retried":0,"dead_lettered":0,"ended":false,"made":"example.com/shop/ticks.go:12"}
}
