package topic

// The feeds that a channel follower's pump and a handler follower's worker
// read: a follower seen as values of T or as records.

// A feed is what a channel or handler follower of type V reads: a follower
// of T, with the values as V (T, or Record[T]).
type feed[V any] interface {
	// next waits for the next value, or until quit or stop is closed
	// (errQuit, errStop); its offset is for commit.
	next(stop <-chan struct{}) (v V, off uint64, err error)
	// sendBatch waits for the next value as next does, then sends it and
	// those readable after it on ch, up to n of them, and returns how many
	// it sent and the offset of the last, for commit. ch must have room
	// for n: no send waits. It sends nothing more once the follower has
	// quit, or a Seek has moved it since the read (before each send: so
	// at most one value read before a Seek is sent after it returned, as
	// when the pump read one at a time); what it read and did not send
	// because the follower quit goes to unsent.
	sendBatch(stop <-chan struct{}, ch chan<- V, n int, unsent func(V)) (sent int, last uint64, err error)
	commit(off uint64)
	// readBatch reads what is readable now, up to n values (one with
	// AckWait), without waiting, into the batch, and returns how many it
	// read; handOut returns the i-th of them and counts it taken, and
	// putBack ends a batch of k of which the first i were handed out,
	// returning the others to the log (see follower.putBack). A handler
	// follower's worker reads so.
	readBatch(n int) int
	handOut(i int) (v V, off uint64)
	putBack(i, k int)
	current() bool
	lag() uint64
	followerStats() *FollowerStats
	sentWith(t *tally) uint64 // t, with what publications handed out (see handoff)
	taken() uint64            // the records read
	freeze()
	unread() (skipped, unread uint64, ok bool)
	probeWait(stop <-chan struct{}, probes <-chan chan probeResult, a answerer) error
	quitting() <-chan struct{}
	poke() // wakes its reader if it waits (see follower.poke)
	end()
	holdName()
	freeName()
	// handOffTo lets publications send to ch, a channel follower's, once
	// it is caught up (see handoff), if they can. Called before its
	// subscription is registered. (A method of the feed, not a type
	// assertion in Broker.subscribeFollower, which every subscribed type
	// instantiates: the follower's code is compiled only for types that
	// are retained.)
	handOffTo(ch chan V, sent *tally)
}

// An answerer answers the drain's probes for a follower that waits: its
// handler, while probed reports true (see Broker.probing).
type answerer interface {
	answerProbe(r chan probeResult)
	probed() bool
}

// A feedMaker makes the feeds of a log's entry: values of T for the entry of
// T, records for that of Record[T] (see logReplay).
type feedMaker[V any] interface {
	newFeed(st *start, skip func(first, n uint64)) (feed[V], any)
}

func (r logReplay[T, V]) newFeed(st *start, skip func(first, n uint64)) (feed[V], any) {
	f := newFollower(r.l, st, skip)
	var fd any = valueFeed[T]{f}
	if r.records {
		fd = recordFeed[T]{f}
	} else {
		f.values = st.pushed // its values are sent, and no record's Time
	}
	return fd.(feed[V]), f // Safety: V is T, or Record[T] if records is set
}

// A valueFeed is a follower read as values of T; a recordFeed as records.
type (
	valueFeed[T any]  struct{ *follower[T] }
	recordFeed[T any] struct{ *follower[T] }
)

// handOffTo: a channel follower of values, which reads every one in order,
// is handed them by the publications once caught up; not one whose reads
// AckWait re-reads, or whose log keeps one per key.
func (f valueFeed[T]) handOffTo(ch chan T, sent *tally) {
	if f.ack == nil && f.l.keyed == nil {
		f.h = &handoff[T]{ch: ch, f: f.follower, sent: sent}
	}
}

// handOffTo: a follower of records is not handed them, which its log's
// values are not.
func (f recordFeed[T]) handOffTo(chan Record[T], *tally) {}

func (f valueFeed[T]) handOut(i int) (T, uint64) {
	bump(&f.took, 1)
	r := &f.scratch[i]
	return r.Value, r.Offset
}

func (f recordFeed[T]) handOut(i int) (Record[T], uint64) {
	bump(&f.took, 1)
	return f.scratch[i], f.scratch[i].Offset
}

func (f *follower[T]) quitting() <-chan struct{} { return f.quit }

func (f valueFeed[T]) next(stop <-chan struct{}) (T, uint64, error) {
	r, err := f.nextRecord(stop)
	return r.Value, r.Offset, err
}

func (f recordFeed[T]) next(stop <-chan struct{}) (Record[T], uint64, error) {
	r, err := f.nextRecord(stop)
	return r, r.Offset, err
}

func (f valueFeed[T]) sendBatch(stop <-chan struct{}, ch chan<- T, n int, unsent func(T)) (int, uint64, error) {
	recs := f.batch(n)
	k, err := f.nextRecords(stop, recs)
	i := 0
	for ; i < k && f.current(); i++ {
		ch <- recs[i].Value
	}
	if i < k && f.ended.Load() {
		for j := i; j < k; j++ {
			unsent(recs[j].Value)
		}
	}
	return f.sent(recs, i, err)
}

func (f recordFeed[T]) sendBatch(stop <-chan struct{}, ch chan<- Record[T], n int, unsent func(Record[T])) (int, uint64, error) {
	recs := f.batch(n)
	k, err := f.nextRecords(stop, recs)
	i := 0
	for ; i < k && f.current(); i++ {
		ch <- recs[i]
	}
	if i < k && f.ended.Load() {
		for j := i; j < k; j++ {
			unsent(recs[j])
		}
	}
	return f.sent(recs, i, err)
}

// current reports whether the records the last read returned are still
// the follower's to send: it has not quit, and no Seek has been made since
// the read moved the position (see move).
func (f *follower[T]) current() bool {
	return !f.ended.Load() && f.seeks.Load() == f.seen
}

// sent ends a batch of which the first i records were sent: it lets go of
// the batch's values (the channel has those it took) and returns what
// sendBatch returns.
func (f *follower[T]) sent(recs []Record[T], i int, err error) (int, uint64, error) {
	var last uint64
	if i > 0 {
		last = recs[i-1].Offset
	}
	clear(recs)
	return i, last, err
}

// readBatch reads up to n records readable now into the follower's
// scratch, without counting them taken: handOut counts each as its reader
// takes it. It reads one with AckWait, where a record read starts its wait,
// which must not run while the records before it are handled; and one from
// a keyed log, whose seal keeps the offsets past what the follower reached
// (see freeze), which a batch put back would fall short of.
func (f *follower[T]) readBatch(n int) int {
	if f.ack != nil || f.l.keyed != nil {
		n = 1
	}
	f.before = f.delivered.Load()
	return f.readAt(f.batch(n), true)
}

// putBack ends a batch of k records read by readBatch, of which the first
// i were handed out: it lets go of their values and returns the others to
// the log, unread. Their reader hands out nothing more of the batch: it
// quits, its handler discards, or a Seek has been made since the read.
// Unless a Seek has (then the Seek wins: what the batch holds is read
// again from where it moved the position, or passed over), the position
// moves back to the first record returned, under the lock that orders it
// with a Seek (see move). Either way delivered goes back to where it stood
// before the read, or to the first record returned if that is further (all
// after it are returned; none was committed, as commit follows handOut),
// so that what the follower never received counts as unread at the seal
// (see unread). A batch of one record, as with AckWait or a keyed log (see
// readBatch), has its record handed out at once, and returns none.
func (f *follower[T]) putBack(i, k int) {
	recs := f.scratch[:k]
	if i < k && f.ack == nil {
		o := recs[i].Offset
		f.mu.Lock()
		if f.seeks.Load() == f.seen {
			f.pos.Store(o)
			f.lastEnd, f.size = o, 0 // size 0: the next read finds o's slot again
		}
		f.mu.Unlock()
		f.delivered.Store(max(f.before, o))
	}
	clear(recs)
}

// batch returns the first n records of the follower's scratch, made (once,
// for a pump or a handler) to hold at least n.
func (f *follower[T]) batch(n int) []Record[T] {
	if len(f.scratch) < n {
		f.scratch = make([]Record[T], n)
	}
	return f.scratch[:n]
}

// nextRecords waits for the next record, then reads it and those readable
// after it into buf, and returns how many it read; or none, if it waited
// while publications handed values to the follower's channel (see
// handoff): the room its pump had for buf may be gone.
func (f *follower[T]) nextRecords(stop <-chan struct{}, buf []Record[T]) (int, error) {
	for {
		if n := f.read(buf); n > 0 {
			return n, nil
		}
		// A read that lost a race with a Seek may have filled buf before
		// it read again and found nothing: keep no value while waiting.
		clear(buf)
		if f.h != nil && f.waitHanded() {
			return 0, nil
		}
		if err := f.wait(stop); err != nil {
			return 0, err
		}
	}
}

// nextRecord waits for the next record.
func (f *follower[T]) nextRecord(stop <-chan struct{}) (Record[T], error) {
	for {
		if f.read(f.buf[:]) == 1 {
			return f.buf[0], nil
		}
		if f.h != nil && f.waitHanded() {
			continue
		}
		if err := f.wait(stop); err != nil {
			return Record[T]{}, err
		}
	}
}
