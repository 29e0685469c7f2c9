// Package topic provides an in-process publish-subscribe broker in which Go
// types are the topics.
//
// A publisher offers an ordinary Go value; a subscriber selects a Go type and
// receives values of that type on a channel. Nothing else identifies a topic:
// there are no names, keys, identifiers, schemas, or registries to declare or
// maintain, and nothing is serialised or generated.
//
// # Basic use
//
// The zero Broker is ready to use.
//
//	type Tick struct{ N int }
//
//	var b topic.Broker
//
//	ch, cancel := b.Subscribe[Tick]()
//	defer cancel()
//
//	b.Publish(Tick{N: 1})
//	fmt.Println((<-ch).N) // 1
//
// The topic of a publication is the compile-time type of the published value,
// and the topic of a subscription is its result type. Publishing through an
// interface variable therefore publishes on that interface type, and a
// subscription naming a concrete type does not see it.
//
// # Matching
//
// A subscription accepts a publication when one of its source types matches
// it. The source types are, in order, those declared with From followed by the
// subscription's own type. A source type S matches a publication of type T
// when S and T are identical, when S is an interface type that the published
// value implements, or when S is any.
//
// An interface source is matched against the published value itself, so it
// sees the value's dynamic type. Publishing through an interface variable can
// therefore reach a subscription to a different interface that the underlying
// value happens to implement.
//
// The first matching source decides the outcome; no later source is
// consulted. A source declared with From delivers the value it returns when it
// reports true and drops the value when it reports false, which is how
// filtering is expressed. Because the subscription's own type is considered
// last, direct matching always remains available.
//
// A nil value of an interface type carries no dynamic type, so it reaches only
// subscriptions whose type is identical to the published interface type, and
// subscriptions to any. Any means the empty interface type itself: a named
// interface type without methods matches every non-nil value, like any other
// interface it is implemented by, but not nil values.
//
// # Delivery and loss
//
// Delivery is a non-blocking send performed while Publish runs. Each
// subscription has its own channel and its own capacity, set with Buffer. If a
// subscription's buffer is full, or it is unbuffered and no receiver is
// waiting, the value is lost for that subscription and publication continues
// for the others. A slow or abandoned subscriber therefore never blocks a
// publisher or another subscriber.
//
// Nothing is lost silently. Each subscription counts the values it lost, by
// Cause: Full (its buffer had no room), Evicted (its Overflow policy is
// DropOldest, which makes room by removing the oldest queued value, keeping
// the order of the rest), Failed (a From function panicked on the value,
// which is then lost for that subscription alone), and Closed (the value was
// published after Broker.Shutdown had closed the subscription). A value a
// From function rejects by returning false is filtered by design, not lost.
// So, once publishers have stopped, the values published that a
// subscription matched equal the values it received, plus those its From
// functions rejected, plus its lost counts. Broker.Subscriptions reports
// the counts, with what each subscription matched, was sent and rejected,
// so that a loss reads as a share (SubscriptionStats.LossRatio);
// Broker.Topics, the publications of each type. OnLoss hands each lost
// value to a function of the subscriber's. Counting costs one atomic
// addition per value lost and, per value delivered, a plain one on a
// counter of the publisher's own (see Broker.Topics).
//
// Delivery is confined to one process, and nothing is retried or persisted
// for a channel subscription. Values one subscription accepts from
// sequential, non-overlapping publications are received in publication
// order; ordering between concurrent publications is unspecified, except for
// retained types (see Broker.Retain), which have one order per type.
//
// # Handlers
//
// Broker.Handle registers a function instead of returning a channel: a
// subscription drained by one goroutine of its own, at most once by default,
// at least once with Retry, with values that fail every attempt (or fail
// with a Permanent error) published as DeadLetter values on the same broker.
// A value that reached a handler from a dead letter is never dead-lettered
// again, so re-driving dead letters cannot loop. Broker.Shutdown drains the
// handlers for a program's shutdown path: what they publish meanwhile still
// reaches the handlers and subscriptions it matches, until none holds a
// value.
//
// # Retained types
//
// Broker.Retain makes a type retained: its publications get offsets and
// times at one sequencing point, the broker keeps the latest within a bound,
// and subscriptions can Replay them before the live ones, with no gap and no
// duplicate; Broker.Read reads them without subscribing. Broker.RetainLatest
// keeps the latest value of each key instead (a compacted log).
//
// # Followers
//
// A follower reads a retained type's log at its own pace instead of being
// sent to: it keeps an offset and reads every value from there on, in offset
// order, so a slow follower loses nothing while the log keeps it, and a
// publication does no work for it beyond waking it if it waits (or sending
// to the channel of a channel follower whose receiver keeps up). It comes in
// three forms: Broker.Follow (pull: Read, Next, Seek, Commit), and the
// Follow option of Subscribe (a channel fed by a goroutine that waits for
// room) and of Handle (a handler that reads a few values at a time from the
// log and calls its function with each in turn, so that retries hold back
// the log, not a queue). Only retention makes a follower lose: when the values at its
// offset are trimmed, it jumps to the oldest kept and learns how many it
// missed, as a record's Skipped field, an OnLoss report and the Skipped
// count of its stats. A Name makes a follower durable within the process:
// the broker keeps its last committed offset, and one started again under
// the name resumes after it; AckWait reads again what was read and not
// committed in time (at least once).
//
// The three delivery models lose values at different points:
//
//   - a channel subscription, when its buffer is full (Full, Evicted), a From
//     function panics (Failed), or it is closed (Closed);
//   - a handler, when its queue is full, as a channel subscription, and when
//     its function fails every attempt (Errored, or a DeadLetter with Retry);
//   - a follower, only when retention trims what it has not read (Skipped),
//     and a handler follower also as a handler's function fails.
//
// Every loss is counted, by subscription and cause, in
// Broker.Subscriptions. Broker.Watch reports them in one place, each
// interval, with the retries and dead letters of handlers, as an Incident
// per subscription that log/slog writes as one line; it costs nothing on
// the delivered path nor on the loss path. Broker.Logs describes the log of
// each retained type.
//
// # Lifecycle
//
// The function returned by Broker.Subscribe unregisters the subscription and
// closes its channel, which ends a range loop over it. Values already accepted
// remain receivable. It is idempotent, and after it returns nothing is ever
// sent on that channel again. It may wait for publications in progress to
// finish their sends, never for a receiver. The Context option cancels a
// subscription when a context ends.
//
// Broker.Shutdown closes the whole broker: it drains the handlers, then
// closes every subscription at once. Afterwards it registers nothing, counts
// a publication that would have reached a closed subscription as Closed,
// and keeps the final counts for Broker.Subscriptions. Broker.Settle waits,
// the same way, until the handlers are idle, without closing anything: for
// tests (package topictest) and for programs that must know their
// publications were handled.
//
// # Concurrency
//
// A Broker is safe for concurrent publication, subscription, cancellation,
// and delivery. Publication takes no lock: concurrent publishers never wait
// for each other or for a subscription or cancellation in progress, except
// publishers of one retained type, which take turns at its sequencing point
// (held for an append and the sends to its subscriptions, never while a
// function of the user's runs, and fair: one that waits longer than a
// millisecond goes before those that have not waited), and the first time a broker with interface subscriptions routes a type (or, for
// an interface type, a dynamic type) it has not routed before, which it
// resolves once under the broker's lock. A From function may publish,
// subscribe and cancel on the same broker, and so may a goroutine ranging over
// a subscription's channel. A Broker must not be copied after first use.
//
// # Allocation
//
// Publication allocates nothing, whatever the value's type and however many
// subscriptions match, unless the value reaches a subscription through an
// interface source. Such a subscription needs the value in an interface, which
// costs one allocation per publication unless the value is pointer-shaped,
// already held in an interface, zero-sized, or a pointer-free value of one,
// two, four, or eight bytes whose bits are below 256, which the runtime boxes
// from read-only storage. That conversion is done once and shared by every
// such subscription, so the cost never depends on how many subscribers match.
// Besides, a few rare events allocate: the first publication of a type on a
// broker with interface subscriptions (its route is built and kept), the
// first time two publishers count a loss of one subscription at the same
// moment (its counters are spread over stripes), and the report of a From
// function's panic.
//
// Interface subscriptions are matched once per published type, and the result
// is kept: a publication that no interface subscription matches is never
// boxed, however many interface subscriptions the broker holds, and a
// subscription whose first matching source for a publication is concrete
// receives it unboxed even if its own type is an interface.
//
// # Cost
//
// Routing a publication is a lookup in a hash table keyed by type, so its cost
// does not depend on how many types are subscribed. The first routing of a
// type (its first subscription, or its first publication on a broker with
// interface subscriptions) inserts it into the table in place, under the
// broker's lock: amortised O(1) in the number of types routed, plus the
// matching of each interface subscription against it; the table doubles when
// half full (see BenchmarkRouteNewTypes). Subscribing and cancelling a
// plain subscription of a concrete type (no From, OnLoss or DropOldest) costs
// O(1), amortized, however many plain subscriptions of its type are held
// (see BenchmarkSubscribeCancelSameType); any other costs in proportion to
// the other subscriptions of its source types, and one with an interface
// source, in proportion to the types the broker has routed.
package topic
