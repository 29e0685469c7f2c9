// Package topicdebug makes a topic.Broker's state visible where operators
// look: expvar's /debug/vars (Var, Publish), and a live page for a person
// (Handler). Both show a Snapshot, taken afresh at each read.
//
// Importing it imports expvar, which registers its handler on
// http.DefaultServeMux at /debug/vars, as importing expvar always does.
// Handler registers nothing: a program mounts it where it wants.
//
// Taking a snapshot never delays a publication of a type that is not
// retained, nor of one retained by Retain: it takes the broker's lock,
// which subscribing and cancelling take and publishing does not, and reads
// every count atomically. A type retained by RetainLatest is the
// exception: its log's offsets, and the lag of each follower of it, are
// read under the log's sequencing point, which a publication of that type
// takes too, held for a scan of the keys it keeps.
package topicdebug

import (
	"encoding/json"
	"expvar"
	"time"

	"github.com/seedaa7df82c/topic"
)

// A Snapshot is what Var and Handler show of a broker: every
// subscription's stats, as Broker.Subscriptions returns them, the total
// lost by cause, the publications of every type and the subscriptions
// each reaches, as Broker.Topics returns them, the log of every retained
// type, as Broker.Logs returns them, and whether Shutdown has been called.
// A Handler's snapshot has the broker's last incidents too.
type Snapshot struct {
	Subscriptions []topic.SubscriptionStats `json:"subscriptions"`
	Lost          topic.Lost                `json:"lost"`
	Topics        []topic.TopicStats        `json:"topics"`
	Logs          []topic.LogStats          `json:"logs"`
	// Incidents are the last incidents of a Watch that a Handler keeps
	// (see Handler), newest first; Take leaves it empty.
	Incidents []Incident `json:"incidents,omitempty"`
	// Shutdown reports that Broker.Shutdown has been called (Broker.Done
	// is closed): the drain is under way or over. Once it is over,
	// Subscriptions holds the subscriptions Shutdown closed and Logs is
	// empty. The counts may still move: handlers finish their queues, and
	// a value published to a closed subscription is counted as Closed.
	Shutdown bool `json:"shutdown"`
}

// Take takes a snapshot of b. Its cost is that of Broker.Subscriptions and
// Broker.Logs (see the package doc for what it never delays); after
// Shutdown it shows the final counts, and Shutdown is true.
func Take(b *topic.Broker) Snapshot {
	if b == nil {
		panic("topicdebug: nil broker")
	}
	subs := b.Subscriptions()
	var lost topic.Lost
	for _, st := range subs {
		l := st.Lost
		lost.Full += l.Full
		lost.Evicted += l.Evicted
		lost.Failed += l.Failed
		lost.Errored += l.Errored
		lost.Discarded += l.Discarded
		lost.Closed += l.Closed
		lost.Skipped += l.Skipped
	}
	if subs == nil {
		subs = []topic.SubscriptionStats{}
	}
	var shut bool
	select {
	case <-b.Done():
		shut = true
	default:
	}
	topics := b.Topics()
	if topics == nil {
		topics = []topic.TopicStats{}
	}
	return Snapshot{Subscriptions: subs, Lost: lost, Topics: topics, Logs: b.Logs(), Shutdown: shut}
}

// An Incident is a topic.Incident, as a Handler keeps it: with the time
// of the interval's end, when its Watch reported it.
type Incident struct {
	At time.Time
	topic.Incident
}

// MarshalJSON encodes i with readable names: the type as printed, the
// losses by cause.
//
//	{"at":"2026-12-06T10:00:01Z","type":"main.Order","name":"billing",
//	 "lost":{"full":1523,...},"matched":40210,"retried":0,"dead_lettered":0,
//	 "ended":false,"made":"example.com/shop/billing.go:42"}
func (i Incident) MarshalJSON() ([]byte, error) {
	typ := ""
	if i.Type != nil {
		typ = i.Type.String()
	}
	return json.Marshal(struct {
		At           time.Time  `json:"at"`
		Type         string     `json:"type"`
		Name         string     `json:"name"`
		Lost         topic.Lost `json:"lost"`
		Matched      uint64     `json:"matched"`
		Retried      uint64     `json:"retried"`
		DeadLettered uint64     `json:"dead_lettered"`
		Ended        bool       `json:"ended"`
		Made         string     `json:"made,omitempty"`
	}{i.At, typ, i.Name, i.Lost, i.Matched, i.Retried, i.DeadLettered, i.Ended, i.Made})
}

// Var returns b's state as an expvar.Var: each call of its String takes a
// snapshot (Take) and encodes it as JSON, with readable names (types as
// printed, policies and causes by name):
//
//	{"subscriptions":[{"type":"main.Order","name":"billing","policy":"drop-newest",
//	  "capacity":64,"queued":3,"lost":{"full":0,...},"handler":{...}}],
//	 "lost":{"full":0,"evicted":0,...},
//	 "logs":[{"type":"main.Tick","count":100,"age":"0s",...,"oldest":150,"next":250,"kept":100}],
//	 "shutdown":false}
//
// It panics if b is nil: a program's mistake, found where it is made rather
// than when /debug/vars is first read.
func Var(b *topic.Broker) expvar.Var {
	if b == nil {
		panic("topicdebug: Var of a nil broker")
	}
	return expvar.Func(func() any { return Take(b) })
}

// Publish publishes Var(b) under name, for /debug/vars. Like expvar.Publish,
// it panics if name is already published (say, by a second Publish of the
// same name), and if b is nil.
func Publish(name string, b *topic.Broker) { expvar.Publish(name, Var(b)) }
