package topic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic"
)

type (
	logsRing  struct{ N int }
	logsKeyed struct {
		SKU   string
		Price int
	}
	logsPlain struct{}
)

func TestLogsDescribesEveryRetainedType(t *testing.T) {
	var b topic.Broker
	if got := b.Logs(); len(got) != 0 {
		t.Fatalf("Logs of a broker retaining nothing = %v", got)
	}
	b.Retain[logsRing](topic.Retention{Count: 3, Age: time.Hour})
	b.RetainLatest[logsKeyed](func(v logsKeyed) string { return v.SKU }, topic.Retention{Count: 10})
	b.Publish(logsPlain{}) // not retained: not listed
	if got, want := b.Logs(), []topic.LogStats{
		{Type: reflect.TypeFor[logsKeyed](), Retention: topic.Retention{Count: 10}, Keyed: true},
		{Type: reflect.TypeFor[logsRing](), Retention: topic.Retention{Count: 3, Age: time.Hour}},
	}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Logs before any publication:\n got %+v\nwant %+v", got, want)
	}
	for i := range 5 {
		b.Publish(logsRing{i})
	}
	for _, v := range []logsKeyed{{"a", 1}, {"b", 2}, {"a", 3}, {"c", 4}, {"b", 5}} {
		b.Publish(v)
	}
	got := b.Logs()
	if len(got) != 2 {
		t.Fatalf("Logs = %+v, want 2 logs", got)
	}
	// Keyed: a@2 was replaced by a@3... the oldest kept is a (offset 2).
	if k := got[0]; k.Oldest != 2 || k.Next != 5 || k.Kept != 3 {
		t.Errorf("keyed log: oldest %d, next %d, kept %d; want 2, 5, 3", k.Oldest, k.Next, k.Kept)
	}
	if r := got[1]; r.Oldest != 2 || r.Next != 5 || r.Kept != 3 {
		t.Errorf("ring log: oldest %d, next %d, kept %d; want 2, 5, 3", r.Oldest, r.Next, r.Kept)
	}
	js, err := json.Marshal(got[1])
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"topic_test.logsRing","count":3,"age":"1h0m0s","no_time":false,"keyed":false,"oldest":2,"next":5,"kept":3}`; string(js) != want {
		t.Errorf("JSON:\n got %s\nwant %s", js, want)
	}
	if js, _ := json.Marshal(topic.LogStats{}); string(js) != `{"type":"","count":0,"age":"0s","no_time":false,"keyed":false,"oldest":0,"next":0,"kept":0}` {
		t.Errorf("JSON of a zero LogStats: %s", js)
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := b.Logs(); len(got) != 0 {
		t.Errorf("Logs after Shutdown = %+v, want none", got)
	}
}

// Logs reads a ring's offsets while publishers append: every snapshot is
// consistent (oldest <= next, kept within the bound) and offsets only grow.
func TestLogsWhilePublishing(t *testing.T) {
	var b topic.Broker
	b.Retain[logsRing](topic.Retention{Count: 16})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 20000 {
			b.Publish(logsRing{i})
		}
	}()
	var last uint64
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		st := b.Logs()[0]
		if st.Oldest > st.Next || st.Kept != int(st.Next-st.Oldest) || st.Kept > 16 || st.Next < last {
			t.Fatalf("inconsistent snapshot %+v after next %d", st, last)
		}
		last = st.Next
	}
	if st := b.Logs()[0]; st.Next != 20000 || st.Oldest != 20000-16 {
		t.Fatalf("final snapshot %+v, want next 20000, oldest 19984", st)
	}
}

// Logs lists each retained type's offsets: how far it has come, what it keeps.
func ExampleBroker_Logs() {
	type Price struct {
		SKU   string
		Cents int
	}
	type Tick struct{ N int }

	var b topic.Broker
	b.Retain[Tick](topic.Retention{Count: 100})
	b.RetainLatest[Price](func(p Price) string { return p.SKU }, topic.Retention{Count: 1000})

	for i := range 250 {
		b.Publish(Tick{N: i})
	}
	b.Publish(Price{"apple", 120})
	b.Publish(Price{"pear", 90})
	b.Publish(Price{"apple", 110})

	for _, l := range b.Logs() {
		fmt.Printf("%-16s keyed=%-5t oldest=%-3d next=%-3d kept=%d\n", l.Type, l.Keyed, l.Oldest, l.Next, l.Kept)
	}
	// Output:
	// topic_test.Price keyed=true  oldest=1   next=3   kept=2
	// topic_test.Tick  keyed=false oldest=150 next=250 kept=100
}

// A LogStats says how far a retained type has come and what its log keeps.
func ExampleLogStats() {
	type Tick struct{ N int }

	var b topic.Broker
	b.Retain[Tick](topic.Retention{Count: 10})
	for i := range 25 {
		b.Publish(Tick{N: i})
	}
	st := b.Logs()[0]
	fmt.Printf("%v: offsets %d to %d kept (%d of at most %d); the next is %d\n",
		st.Type, st.Oldest, st.Next-1, st.Kept, st.Retention.Count, st.Next)
	// Output:
	// topic_test.Tick: offsets 15 to 24 kept (10 of at most 10); the next is 25
}

// Its JSON has readable names, the age bound as a duration.
func ExampleLogStats_MarshalJSON() {
	type Tick struct{ N int }

	var b topic.Broker
	b.Retain[Tick](topic.Retention{Count: 10, Age: time.Minute})
	b.Publish(Tick{N: 1})
	js, _ := json.Marshal(b.Logs()[0])
	fmt.Println(string(js))
	// Output:
	// {"type":"topic_test.Tick","count":10,"age":"1m0s","no_time":false,"keyed":false,"oldest":0,"next":1,"kept":1}
}
