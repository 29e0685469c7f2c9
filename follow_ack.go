package topic

// What AckWait keeps of a follower: its reads not yet committed, and the
// re-reads they make due.

import (
	"sync"
	"time"
)

// An ackState is what AckWait keeps of a follower: its reads not yet
// committed, in order, each a run of offsets and when it was read. A Seek
// forgets them. Its reader, Commit and Seek may use it at once: mu orders
// them.
type ackState struct {
	wait  int64 // AckWait, in nanoseconds; never changes
	mu    sync.Mutex
	reads []readMark  // guarded by mu
	timer *time.Timer // pokes the follower when a re-read is due (alarm); guarded by mu
	// Guarded by mu: the Seeks made, and that count when the reader's
	// read started (see move); where the re-read in progress ends, 0
	// after a Seek, and the runs it owes (see start), with a spare.
	seeks, seen uint64
	replayTo    uint64
	owed, spare []readMark
	runs        []readMark // owedIn's result; reader only
}

// A readMark is a run of offsets read, from first up to end, from time from
// to time to (logOf.now): the reads of less than wait/64 are one run, so
// that a reader that never commits keeps at most about 64 of them per
// AckWait. A run counts from its last read, so a value may be read again up
// to a 64th of AckWait late, never early.
type readMark struct {
	first, end uint64
	from, to   int64
}

// start returns where a read from offset o starts, committed being the
// follower's committed end, and notes the count of Seeks for the read's
// move. With redo, if the oldest read not committed is older than AckWait,
// the read goes back to its first offset (never past o: a Seek back since
// is kept), the reads are forgotten, and a re-read runs up to o. A re-read
// reads nothing committed: values committed after it began (up to where
// it ends) are passed over, not read again. A Seek ends the re-read: the
// values it moves to are read again, committed or not.
func (a *ackState) start(now int64, o, committed uint64, redo bool) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = a.seeks
	if redo && len(a.reads) > 0 && now-a.reads[0].to > a.wait {
		// The re-read owes the values read and not committed: those of
		// the reads (all below o), then those a re-read in progress has
		// not reached (from o on). Only these, trimmed before it reaches
		// them, are skipped values it tells: the others below replayTo
		// were told when they were first skipped (see owedIn).
		w := append(a.spare[:0], a.reads...)
		for _, m := range a.owed {
			if m.end > o {
				m.first = max(m.first, o)
				w = append(w, m)
			}
		}
		a.owed, a.spare = w, a.owed
		a.replayTo = max(a.replayTo, o)
		o = min(o, a.reads[0].first)
		a.reads = a.reads[:0]
	}
	return a.pastCommittedLocked(o, committed)
}

// pastCommittedLocked returns where a read from position o starts, given
// the follower's committed offset: during a re-read (below replayTo), past
// what was committed, up to where the re-read ends. The caller holds mu.
func (a *ackState) pastCommittedLocked(o, committed uint64) uint64 {
	if o < a.replayTo {
		return min(max(o, committed), a.replayTo)
	}
	return o
}

// owedIn returns the runs of the offsets from first up to end that a read
// skipped and must tell, and false if it is no re-read (all of them): of a
// re-read, those it owes (see start) and those from replayTo on, which it
// never read. Adjacent runs are one. The runs are the reader's until its
// next call.
func (a *ackState) owedIn(first, end uint64) ([]readMark, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if first >= a.replayTo {
		return nil, false
	}
	runs := a.runs[:0]
	add := func(from, to uint64) {
		if from >= to {
			return
		}
		if k := len(runs); k > 0 && runs[k-1].end == from {
			runs[k-1].end = to
			return
		}
		runs = append(runs, readMark{first: from, end: to})
	}
	for _, m := range a.owed {
		add(max(m.first, first), min(m.end, end, a.replayTo))
	}
	add(max(first, a.replayTo), end)
	a.runs = runs
	return runs, true
}

// due reports whether a read at now would read again what was read and
// not committed (see start).
func (a *ackState) due(now int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.reads) > 0 && now-a.reads[0].to > a.wait
}

// readLocked records a read of the offsets from first up to end at now;
// the caller holds mu.
func (a *ackState) readLocked(first, end uint64, now int64) {
	if k := len(a.reads); k > 0 && a.reads[k-1].end == first && now-a.reads[k-1].from < a.wait/64 {
		a.reads[k-1].end, a.reads[k-1].to = end, now
		return
	}
	a.reads = append(a.reads, readMark{first: first, end: end, from: now, to: now})
}

// commit forgets what is committed: the offsets below end.
func (a *ackState) commit(end uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	i := 0
	for i < len(a.reads) && a.reads[i].end <= end {
		i++
	}
	a.reads = append(a.reads[:0], a.reads[i:]...)
	if len(a.reads) > 0 && a.reads[0].first < end {
		a.reads[0].first = end // the rest of that run, read when it was
	}
}
