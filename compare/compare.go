// Package compare measures topic beside other in-process publish-subscribe
// libraries, each used the way its own README shows.
//
// Every library is reached through a Bus, a thin adapter that publishes a
// 32-byte Value on a numbered topic and subscribes counting or stuck
// subscribers to it. The adapters add the same small cost to every library
// (a call through a func value per publication, an atomic add per receipt)
// and no tuning that the library's users would not do. The benchmarks and the
// reliability test in this package's tests drive every library through the
// same scenarios; see README.md.
package compare

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seedaa7df82c/topic/internal/hist"
)

// Value is the payload every library carries. It is 32 bytes, so a library
// that boxes it in an interface allocates.
type Value struct{ A, B, C, D int64 }

// Capacity is the buffer given to every subscription of every library that
// lets its users choose one, so that none drops or blocks sooner than another
// for want of a buffer.
const Capacity = 64

// Topics is the number of distinct topics a Bus offers.
const Topics = 100

// A Lib is one library under comparison.
type Lib struct {
	// Name is the lib= key of its benchmarks.
	Name string
	// New returns a fresh instance, ready for subscriptions.
	New func() Bus
	// Lossless reports that the library never drops a value: its publisher
	// waits, or it queues, instead.
	Lossless bool
	// BlocksWhenStuck reports that publication stops returning once a
	// subscriber stops taking values. The benchmark of a stuck subscriber skips
	// such a library; the reliability test shows it.
	BlocksWhenStuck bool
	// GrowsWhenStuck reports that the library keeps every value a stuck
	// subscriber has not taken, in a goroutine each or in a queue without
	// bound, so a run's memory grows with its length.
	GrowsWhenStuck bool
	// Paced reports that the publisher waits for its slowest counting
	// subscriber to be less than a window behind, as a program that must
	// lose nothing does with a library whose publisher never waits: it
	// waits for the subscribers of its own topic, never for a stuck one.
	Paced bool
}

// A Bus is one instance of a library. Its methods are called one at a time;
// the publication functions it returns, and Stuck's Release, may be called
// from any goroutine.
type Bus interface {
	// Publisher returns the function that publishes a value on topic i,
	// 0 ≤ i < Topics. The function may be called from any goroutine.
	Publisher(i int) func(Value)
	// Subscribe adds a subscriber to topic i that counts into c every value
	// it receives, on its own goroutine or, for a callback library, in its
	// callback.
	Subscribe(i int, c *Counter)
	// SubscribeStuck adds a subscriber to topic i that never takes a value
	// until it is released.
	SubscribeStuck(i int) Stuck
	// Close does what a user does to stop: it cancels the subscriptions or
	// closes the library, then waits until no counting subscriber will count
	// again. It may block while a stuck subscriber holds the library.
	Close()
}

// A LossCounter is a Bus that counts the values its counting subscribers
// lost (topic does; the others keep no count).
type LossCounter interface {
	// CountedLosses returns what the counting subscribers lost, as counted
	// by the library itself.
	CountedLosses() int64
}

// A Stuck subscriber never takes a value until Release is called.
type Stuck interface {
	// Release makes the subscriber take, and discard, every value from now
	// on. It is idempotent and does not block.
	Release()
}

// A Counter counts the values one subscriber received, and may record the
// latency of each.
type Counter struct {
	n       atomic.Int64
	want    int64         // set before the first Add, never changed
	reached chan struct{} // closed by the Add that makes n reach want
	// lat, if not nil, records the latency of each value taken (Take),
	// under mu: a library may call one subscriber's callback on several
	// goroutines at once. base is the time its values' A field counts
	// from.
	lat  *hist.Histogram
	mu   sync.Mutex
	base time.Time
}

// NewCounter returns a counter whose Reached channel is closed when it has
// counted want values. A want of zero or less is never reached.
func NewCounter(want int64) *Counter {
	return &Counter{want: want, reached: make(chan struct{})}
}

// NewLatencyCounter returns a counter as NewCounter does that also records
// the latency of each value it takes: the time since base when it is
// taken, less the value's A field, the time since base when it was
// published, in nanoseconds.
func NewLatencyCounter(want int64, base time.Time) *Counter {
	c := NewCounter(want)
	c.lat, c.base = new(hist.Histogram), base
	return c
}

// Take counts v, as Add does, recording its latency if c records them. A
// subscriber that has the value calls Take rather than Add.
func (c *Counter) Take(v Value) {
	if c.lat != nil {
		c.record(v)
	}
	c.Add()
}

// record records v's latency.
func (c *Counter) record(v Value) {
	d := time.Since(c.base) - time.Duration(v.A)
	c.mu.Lock()
	c.lat.Record(d)
	c.mu.Unlock()
}

// Latency returns the latencies recorded, nil if c records none. Read it
// once the subscriber has taken its last value.
func (c *Counter) Latency() *hist.Histogram { return c.lat }

// Add counts one value. It may be called from any goroutine.
func (c *Counter) Add() {
	if c.n.Add(1) == c.want {
		close(c.reached)
	}
}

// AddN counts n values, n > 0, as n calls of Add would.
func (c *Counter) AddN(n int64) {
	if after := c.n.Add(n); after >= c.want && after-n < c.want {
		close(c.reached)
	}
}

// Want returns the count whose reach Reached tells.
func (c *Counter) Want() int64 { return c.want }

// Load returns the number of values counted so far.
func (c *Counter) Load() int64 { return c.n.Load() }

// Reached returns a channel closed once the counter has counted want values.
func (c *Counter) Reached() <-chan struct{} { return c.reached }

// topicNames are the names of the topics for the libraries that name them.
var topicNames = func() []string {
	names := make([]string, Topics)
	for i := range names {
		names[i] = "topic" + strconv.Itoa(i)
	}
	return names
}()

// Libs are the libraries under comparison, this one first: benchstat compares
// each column with the first.
var Libs = []Lib{
	{Name: "topic", New: newTopicBus},
	{Name: "topic-follower", New: newTopicFollowers, Lossless: true, Paced: true},
	{Name: "topic-handler", New: newTopicHandlers, Lossless: true, Paced: true},
	{Name: "mutex", New: newMutexBus},
	{Name: "pubsub", New: newPubsubBlocking, Lossless: true, BlocksWhenStuck: true},
	{Name: "pubsub-try", New: newPubsubTry},
	{Name: "eventbus", New: newEventBusSync, Lossless: true, BlocksWhenStuck: true},
	{Name: "eventbus-async", New: newEventBusAsync, Lossless: true, GrowsWhenStuck: true},
	{Name: "watermill", New: newWatermill, Lossless: true, GrowsWhenStuck: true},
	{Name: "watermill-router", New: newWatermillRouter, Lossless: true, GrowsWhenStuck: true},
	{Name: "tailscale", New: newTailscale, Lossless: true, GrowsWhenStuck: true},
	{Name: "libp2p", New: newLibp2p, Lossless: true, BlocksWhenStuck: true},
}
