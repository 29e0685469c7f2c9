package topic

// Where a subscription or follower starts in a retained type's log: Start,
// its constructors, and the Replay option that takes one.

// from returns the first offset s starts at, given the log's head and tail.
func (s Start) from(head, tail uint64) uint64 {
	switch s.kind {
	case startLast:
		if s.n >= tail-head {
			return head
		}
		return tail - s.n
	case startAt:
		return min(max(s.n, head), tail)
	case startEarliest:
		return head
	}
	return tail
}

// A Start says where a subscription to a retained type starts: see Replay.
type Start struct {
	kind startKind
	n    uint64
}

type startKind uint8

const (
	startNext startKind = iota
	startLast
	startAt
	startEarliest
)

// Next starts with the next value published: no replay, the default.
func Next() Start { return Start{} }

// Last starts with the last n values kept, or all of them if fewer are
// kept. Last(0) is Next().
func Last(n int) Start {
	if n <= 0 {
		return Start{}
	}
	return Start{kind: startLast, n: uint64(n)}
}

// At starts at offset o.
//
// A follower starts with its position at o, as Follower.Seek(o) sets it:
// if o is no longer kept, its first read skips to the oldest value kept and
// tells what it skipped (Record.Skipped, counted Skipped); if o is not yet
// given, it waits for o, and reads nothing published before it.
//
// A subscription that is sent to (no Follow option) has no position to
// keep: it replays the values kept from o on (from the oldest kept if o is
// no longer kept, with nothing told), then receives the live ones; if o is
// not yet given, it receives the live values from the next one published.
func At(o uint64) Start { return Start{kind: startAt, n: o} }

// Earliest starts at the oldest value kept.
func Earliest() Start { return Start{kind: startEarliest} }

// Replay makes a subscription to a retained type T, or to Record[T], start
// at s: it receives the values kept from there on, then the live ones, with
// no gap and no duplicate, whatever the publishers are doing. The backlog
// goes through the subscription's sources like a live publication (a From
// filter filters it) and into its channel before Subscribe returns, so a
// channel smaller than the backlog loses values under its Overflow policy,
// counted and reported: give it a Buffer large enough for the replay it
// asks for. Given more than once, the last one wins.
//
// The replay runs no function of the user's while it holds T's sequencing
// point, so its From and OnLoss functions may make any call on the broker,
// T and other retained types included (Publish, Append, Read, Subscribe
// with Replay). Without a From source for T, the backlog is sent as a
// publisher sends, with the sequencing point held, so that publications of
// T wait for it and arrive after it; the losses are reported to OnLoss after
// letting go of it. With a From source for T, the backlog is copied out and
// given to the function after letting go of it: a concurrent publication,
// or one the function makes, may then reach the subscription before the end
// of the backlog, as concurrent publications reach a From source in any
// order.
//
// Subscribe panics if the subscription's type is not retained (see
// Broker.Retain); declare retention first. A handler (Broker.Handle) replays
// the same way.
func Replay[T any](s Start) Option[T] {
	return Option[T]{apply: func(c *config[T]) { c.start = &s }}
}
