package topicdebug_test

import (
	"context"
	"encoding/json"
	"expvar"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/topicdebug"
)

type order struct{ ID int }

// runs numbers the runs of TestPublishServesDebugVars, whose expvar name
// must differ each time.
var runs atomic.Int32

// decoded is the JSON of a Var, decoded.
type decoded struct {
	Subscriptions []struct {
		Type, Name, Policy string
		Capacity, Queued   int
		Lost               map[string]uint64
		Handler            map[string]any
	}
	Lost     map[string]uint64
	Shutdown bool
}

func decode(t *testing.T, s string) decoded {
	t.Helper()
	var d decoded
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		t.Fatalf("the Var's JSON does not decode: %v\n%s", err, s)
	}
	return d
}

// The Var's JSON names types, policies and causes as people read them, is
// taken afresh at each read, and totals the losses by cause.
func TestVarIsAFreshReadableSnapshot(t *testing.T) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	v := topicdebug.Var(&b)
	if d := decode(t, v.String()); len(d.Subscriptions) != 0 || d.Lost["full"] != 0 || d.Shutdown {
		t.Errorf("an empty broker's Var = %s", v.String())
	}
	b.Subscribe(topic.Buffer[order](1), topic.Name[order]("billing"), topic.Overflow[order](topic.DropOldest))
	b.Handle(func(context.Context, string) error { return nil })
	for i := range 3 {
		b.Publish(order{i})
	}
	d := decode(t, v.String())
	if len(d.Subscriptions) != 2 {
		t.Fatalf("Var shows %d subscriptions, want 2: %s", len(d.Subscriptions), v.String())
	}
	bill := d.Subscriptions[1] // ordered by type: string, then topicdebug_test.order
	if bill.Type != "topicdebug_test.order" || bill.Name != "billing" || bill.Policy != "drop-oldest" ||
		bill.Capacity != 1 || bill.Queued != 1 || bill.Lost["evicted"] != 2 || bill.Handler != nil {
		t.Errorf("the subscription reads %+v", bill)
	}
	if h := d.Subscriptions[0]; h.Type != "string" || h.Handler == nil {
		t.Errorf("the handler reads %+v", h)
	}
	if d.Lost["evicted"] != 2 || d.Lost["full"] != 0 {
		t.Errorf("total lost %v, want evicted 2", d.Lost)
	}
}

// After Shutdown the Var shows the final counts, Closed included, and says
// it is shut down.
func TestVarAfterShutdown(t *testing.T) {
	var b topic.Broker
	b.Subscribe[order]()
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.Publish(order{1})
	d := decode(t, topicdebug.Var(&b).String())
	if len(d.Subscriptions) != 1 || d.Subscriptions[0].Lost["closed"] != 1 || d.Lost["closed"] != 1 || !d.Shutdown {
		t.Errorf("after Shutdown the Var reads %+v", d)
	}
}

// Publish serves the Var at /debug/vars; publishing a name twice panics, as
// expvar does. The name is the test's own: expvar's names are process-wide.
func TestPublishServesDebugVars(t *testing.T) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	b.Subscribe(topic.Name[order]("billing"))
	name := fmt.Sprint("topicdebug-test-", t.Name(), "-", runs.Add(1)) // -count=2 runs it again
	topicdebug.Publish(name, &b)
	srv := httptest.NewServer(expvar.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var vars map[string]json.RawMessage
	if err := json.Unmarshal(body, &vars); err != nil {
		t.Fatalf("/debug/vars is not JSON: %v", err)
	}
	if d := decode(t, string(vars[name])); len(d.Subscriptions) != 1 || d.Subscriptions[0].Name != "billing" {
		t.Errorf("/debug/vars shows %s as %s", name, vars[name])
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), name) {
			t.Errorf("a second Publish of %q panicked with %v", name, r)
		}
	}()
	topicdebug.Publish(name, &b)
}

// A nil broker is a program's mistake: Take, Var, Publish and Handler panic
// at once, with the package's prefix.
func TestNilBrokerPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"Take":    func() { topicdebug.Take(nil) },
		"Var":     func() { topicdebug.Var(nil) },
		"Publish": func() { topicdebug.Publish("topicdebug-test-nil", nil) },
		"Handler": func() { topicdebug.Handler(nil) },
	} {
		func() {
			defer func() {
				if r := recover(); !strings.HasPrefix(fmt.Sprint(r), "topicdebug: ") {
					t.Errorf("%s(nil) panicked with %v", name, r)
				}
			}()
			f()
		}()
	}
	if expvar.Get("topicdebug-test-nil") != nil {
		t.Errorf("Publish of a nil broker published its name")
	}
}
