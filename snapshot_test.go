package topic_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// A snapshot marshals to JSON a person can read: the type as printed, the
// policy and the causes by name, the handler's counts by name.
func TestSubscriptionsMarshalToReadableJSON(t *testing.T) {
	t.Parallel()
	var b topic.Broker
	_, cancel := b.Subscribe(topic.Name[int]("ints"), topic.Buffer[int](1), topic.Overflow[int](topic.DropOldest))
	defer cancel()
	b.Publish(1)
	b.Publish(2)
	out, err := json.Marshal(b.Subscriptions())
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"int","name":"ints","policy":"drop-oldest","capacity":1,"queued":1,` +
		`"lost":{"full":0,"evicted":1,"failed":0,"errored":0,"discarded":0,"closed":0,"skipped":0},` +
		`"sent":2,"rejected":0,"matched":2,"made":"github.com/seedaa7df82c/topic_test/snapshot_test.go:19"}]`
	if string(out) != want {
		t.Errorf("json.Marshal(Subscriptions()):\n got %s\nwant %s", out, want)
	}

	h := topic.HandlerStats{Accepted: 3, Handled: 2, Retried: 1, DeadLettered: 1, AtLeastOnce: true}
	out, err = json.Marshal(topic.SubscriptionStats{Handler: &h})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"type":""`) ||
		!strings.Contains(string(out), `"handler":{"accepted":3,"handled":2,"retried":1,"dead_lettered":1,"at_least_once":true}`) {
		t.Errorf("json.Marshal of a handler's stats: %s", out)
	}
}

// Causes and policies marshal as their names and unmarshal from them; an
// unknown name is an error.
func TestCausesAndPoliciesRoundTripAsText(t *testing.T) {
	t.Parallel()
	for c := topic.Full; c <= topic.Skipped; c++ {
		text, _ := c.MarshalText()
		var back topic.Cause
		if err := back.UnmarshalText(text); err != nil || back != c || string(text) != c.String() {
			t.Errorf("cause %d: text %q, back %v, %v", c, text, back, err)
		}
	}
	for _, p := range []topic.Policy{topic.DropNewest, topic.DropOldest} {
		text, _ := p.MarshalText()
		var back topic.Policy
		if err := back.UnmarshalText(text); err != nil || back != p {
			t.Errorf("policy %v: text %q, back %v, %v", p, text, back, err)
		}
	}
	var c topic.Cause
	if err := c.UnmarshalText([]byte("gone")); err == nil || !strings.HasPrefix(err.Error(), "topic: ") {
		t.Errorf("UnmarshalText(gone) = %v, want a topic: error", err)
	}
	var p topic.Policy
	if err := json.Unmarshal([]byte(`"sideways"`), &p); err == nil {
		t.Error("an unknown policy unmarshalled")
	}
	if s := topic.Cause(0).String(); s != "Cause(0)" {
		t.Errorf("Cause(0) = %q", s)
	}
}

// Every subscription says where it was made: the package, file and line of
// the call of Subscribe, Handle or Follow, whatever its options; the same
// place for every subscription made there.
func TestEverySubscriptionSaysWhereItWasMade(t *testing.T) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	b.Retain[string](topic.Retention{Count: 8})
	line := func() int { _, _, l, _ := runtime.Caller(1); return l }
	at := func(l int) string { return "github.com/seedaa7df82c/topic_test/snapshot_test.go:" + strconv.Itoa(l) }
	want := map[string]string{}
	l := line()
	b.Subscribe(topic.Name[int]("channel"))
	want["channel"] = at(l + 1)
	l = line()
	b.Handle(func(context.Context, int) error { return nil }, topic.Name[int]("handler"))
	want["handler"] = at(l + 1)
	l = line()
	b.Subscribe(topic.Follow[string](), topic.Name[string]("channel follower"))
	want["channel follower"] = at(l + 1)
	l = line()
	b.Handle(func(context.Context, string) error { return nil }, topic.Follow[string](), topic.Name[string]("handler follower"))
	want["handler follower"] = at(l + 1)
	l = line()
	b.Follow(topic.Name[string]("follower"))
	want["follower"] = at(l + 1)
	l = line()
	for i := range 2 {
		b.Subscribe(topic.Name[int]("loop" + strconv.Itoa(i)))
		want["loop"+strconv.Itoa(i)] = at(l + 2)
	}
	for _, st := range b.Subscriptions() {
		if st.Made != want[st.Name] {
			t.Errorf("%s: made at %q, want %q", st.Name, st.Made, want[st.Name])
		}
		delete(want, st.Name)
	}
	if len(want) > 0 {
		t.Errorf("not listed: %v", want)
	}
}
