package reference_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

// refLog is a simple, obviously correct model of a retained type's log and
// its followers, written from the documentation of Retain, Read, Follow and
// Follower: a mutex and a slice of every value ever published, of which the
// last Count are kept. It models one goroutine; ages are left out, and time
// is a clock the harness moves (for AckWait).
type refLog struct {
	mu        sync.Mutex
	now       time.Duration // since the start
	count     int
	values    []int // offset i holds values[i]; the last count are kept
	followers map[int]*refFollower
	names     map[string]uint64 // the offset committed last, plus one
	starts    map[string]uint64 // where the first follower with the name started
	live      map[string]bool   // the names of live followers
}

// refFollower is one follower of a refLog.
type refFollower struct {
	pos, committed, delivered uint64 // delivered: the offset read last, plus one
	name                      string
	skipped                   uint64 // skipped, not yet told in a record
	lastEnd                   uint64 // pos after the last read: a Seek elsewhere since drops skipped
	lost                      uint64 // Lost.Skipped
	runs                      [][2]uint64
	runStart                  uint64 // the first run of this read, ^0 after it
	closed                    bool
	// AckWait: the wait, what was read and not committed (each read's
	// offsets, in order, and when it was read), and where a re-read ends.
	wait     time.Duration
	unacked  []refRead
	replayTo uint64
	owed     map[uint64]bool // what the re-read reads again, read before
}

// refRead is a read of the offsets from first up to end, at time at.
type refRead struct {
	first, end uint64
	at         time.Duration
}

func newRefLog(count int) *refLog {
	return &refLog{count: count, followers: map[int]*refFollower{}, names: map[string]uint64{}, starts: map[string]uint64{}, live: map[string]bool{}}
}

// head is the offset of the oldest value kept; tail that of the next.
func (r *refLog) head() uint64 {
	return uint64(max(0, len(r.values)-r.count))
}

func (r *refLog) tail() uint64 { return uint64(len(r.values)) }

func (r *refLog) publish(v int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.values = append(r.values, v)
}

// from returns where a follower's start begins: the documentation of Last,
// At, Earliest and Next.
func (r *refLog) from(kind, n int) uint64 {
	h, t := r.head(), r.tail()
	switch kind {
	case 1: // Last(n)
		if n <= 0 {
			return t
		}
		if uint64(n) >= t-h {
			return h
		}
		return t - uint64(n)
	case 2: // At(n): a follower's position, as Seek(n) sets it
		return uint64(n)
	case 3: // Earliest
		return h
	}
	return t // Next
}

// follow makes follower id; it reports false if its name is live (a
// panic).
func (r *refLog) follow(id, kind, n int, name string, wait time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name != "" && r.live[name] {
		return false
	}
	f := &refFollower{name: name, wait: wait, runStart: ^uint64(0)}
	f.pos = r.fromLocked(kind, n)
	if name != "" {
		start, ok := r.starts[name]
		if !ok {
			start = f.pos
			r.starts[name] = start
		}
		if c := r.names[name]; c > 0 {
			f.pos, f.committed, f.delivered = c, c, c // after its last commit
		} else {
			f.pos = start // nothing committed: where the name started
		}
	}
	f.lastEnd = f.pos
	if name != "" {
		r.live[name] = true
	}
	r.followers[id] = f
	return true
}

func (r *refLog) fromLocked(kind, n int) uint64 { return r.from(kind, n) }

// read reads up to n records for f.
func (r *refLog) read(id, n int) []topic.Record[int] {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.followers[id]
	if f.closed || n <= 0 {
		return nil
	}
	if f.pos != f.lastEnd {
		f.skipped = 0 // what was skipped is not just before what is read now
	}
	defer func() { f.lastEnd = f.pos }()
	// AckWait: a read once the oldest read not committed is older than
	// the wait reads again from its first value: a re-read, up to where the
	// follower was, which passes over what is committed meanwhile.
	if len(f.unacked) > 0 && r.now-f.unacked[0].at > f.wait {
		// It owes what it read and did not commit, and what a re-read in
		// progress has not reached yet.
		owed := map[uint64]bool{}
		for _, u := range f.unacked {
			for o := u.first; o < u.end; o++ {
				owed[o] = true
			}
		}
		for o := range f.owed {
			if o >= f.pos {
				owed[o] = true
			}
		}
		f.owed = owed
		f.replayTo = max(f.replayTo, f.pos)
		f.pos = min(f.pos, f.unacked[0].first)
		f.unacked = nil
	}
	if f.pos < f.replayTo {
		f.pos = min(max(f.pos, f.committed), f.replayTo)
	}
	// What it skips is told once: of a re-read, what it owes (values it
	// read, trimmed before it reads them again) and what it never read.
	for ; f.pos < r.head(); f.pos++ {
		if f.pos < f.replayTo && !f.owed[f.pos] {
			continue // told when first skipped
		}
		f.skipped++
		f.lost++
		if k := len(f.runs); k > 0 && f.runs[k-1][0]+f.runs[k-1][1] == f.pos && f.runStart <= f.runs[k-1][0] {
			f.runs[k-1][1]++
		} else {
			f.runs = append(f.runs, [2]uint64{f.pos, 1})
			f.runStart = f.pos
		}
	}
	f.runStart = ^uint64(0) // the next read's runs are its own
	var recs []topic.Record[int]
	for f.pos < r.tail() && len(recs) < n {
		recs = append(recs, topic.Record[int]{Offset: f.pos, Value: r.values[f.pos]})
		f.pos++
	}
	if len(recs) > 0 {
		recs[0].Skipped, f.skipped = f.skipped, 0
		f.delivered = max(f.delivered, f.pos)
		if first := max(recs[0].Offset, f.committed); f.wait > 0 && first < f.pos {
			f.unacked = append(f.unacked, refRead{first, f.pos, r.now})
		}
	}
	return recs
}

// next is where f's next read starts, unless a re-read is due: past what
// is committed while a re-read runs.
func (f *refFollower) next() uint64 {
	if f.pos < f.replayTo {
		return min(max(f.pos, f.committed), f.replayTo)
	}
	return f.pos
}

func (r *refLog) seek(id int, o uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f := r.followers[id]; !f.closed {
		f.pos = o
		f.unacked, f.replayTo, f.owed = nil, 0, nil // read again from o, committed or not
	}
}

// commit reports false if o was never read (a panic).
func (r *refLog) commit(id int, o uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.followers[id]
	if f.closed {
		return true // does nothing
	}
	if o >= f.delivered {
		return false
	}
	f.committed = max(f.committed, o+1)
	// What is committed is not read again: the reads that end by it are
	// forgotten, and the one it ends inside keeps the rest, read when it was.
	for len(f.unacked) > 0 && f.unacked[0].end <= f.committed {
		f.unacked = f.unacked[1:]
	}
	if len(f.unacked) > 0 {
		f.unacked[0].first = max(f.unacked[0].first, f.committed)
	}
	if f.name != "" {
		r.names[f.name] = max(r.names[f.name], o+1)
	}
	return true
}

func (r *refLog) close(id int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.followers[id]
	if !f.closed && f.name != "" {
		r.live[f.name] = false
	}
	f.closed = true
}

// readLog is Broker.Read.
func (r *refLog) readLog(from uint64, n int) ([]topic.Record[int], uint64, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var skipped uint64
	if h := r.head(); from < h {
		skipped, from = h-from, h
	}
	var recs []topic.Record[int]
	o := from
	for ; o < r.tail() && len(recs) < n; o++ {
		recs = append(recs, topic.Record[int]{Offset: o, Value: r.values[o]})
	}
	return recs, o, skipped
}

// logHarness drives a real log and the model with the same operations.
type logHarness struct {
	t     testing.TB
	b     topic.Broker
	ref   *refLog
	real  map[int]*topic.Follower[int]
	runs  map[int][][2]uint64 // the skipped runs OnLoss told, per follower
	ids   int
	log   []string
	value int
}

// The encoding, a byte at a time (a missing byte reads as zero):
//
//	b%9 in {0, 1, 2}: publish the next value (1, 2, 3...)
//	b%9 == 3: follow, then kind (%4: Next, Last, At, Earliest), n, name (%4: 0 none, else "n1".."n3";
//	          of a name, /4%3: AckWait none, 64ms, 128ms)
//	b%9 == 4: read, then follower, batch (%5+1)
//	b%9 == 5: seek, then follower, offset
//	b%9 == 6: commit, then follower, offset (below what it read, or not)
//	b%9 == 7: close, then follower; or, for a follower index of 255, Broker.Read from, max
//	b%9 == 8: let time pass, then 16ms times (%8)
//
// It runs in a synctest bubble, whose clock only the last moves.
func logRun(t *testing.T, data []byte, count int) {
	synctest.Test(t, func(t *testing.T) { logRunIn(t, data, count) })
}

func logRunIn(t *testing.T, data []byte, count int) {
	h := &logHarness{t: t, ref: newRefLog(count), real: map[int]*topic.Follower[int]{}, runs: map[int][][2]uint64{}}
	h.b.Retain[int](topic.Retention{Count: count})
	in := fuzzInput(data)
	for n := 0; len(in) > 0 && n < 400; n++ {
		switch in.next() % 9 {
		case 0, 1, 2:
			h.value++
			h.logf("Publish(%d)", h.value)
			h.b.Publish(h.value)
			h.ref.publish(h.value)
		case 3:
			h.follow(in.next()%4, in.next()%16, in.next())
		case 4:
			if id, ok := h.pick(&in); ok {
				h.read(id, in.next()%5+1)
			}
		case 5:
			if id, ok := h.pick(&in); ok {
				o := uint64(in.next() % (int(h.ref.tail()) + 3))
				h.logf("f%d.Seek(%d)", id, o)
				h.real[id].Seek(o)
				h.ref.seek(id, o)
			}
		case 6:
			if id, ok := h.pick(&in); ok {
				h.commit(id, uint64(in.next()%(int(h.ref.tail())+2)))
			}
		case 7:
			k := in.next()
			if k == 255 || len(h.real) == 0 {
				h.readLog(uint64(in.next()%(int(h.ref.tail())+2)), in.next()%6)
				continue
			}
			id := h.order()[k%len(h.real)]
			h.logf("f%d.Close()", id)
			h.real[id].Close()
			h.ref.close(id)
		case 8:
			d := time.Duration(in.next()%8) * 16 * time.Millisecond
			h.logf("Sleep(%v)", d)
			time.Sleep(d)
			h.ref.now += d
		}
		h.check()
	}
	for _, id := range h.order() {
		h.read(id, 1000)
	}
	h.check()
}

func (h *logHarness) logf(format string, args ...any) {
	h.log = append(h.log, fmt.Sprintf(format, args...))
}

func (h *logHarness) failf(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("%s\noperations:\n\t%s", fmt.Sprintf(format, args...), strings.Join(h.log, "\n\t"))
}

// order returns the ids of the followers made, in order.
func (h *logHarness) order() []int {
	var ids []int
	for id := range h.real {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (h *logHarness) pick(in *fuzzInput) (int, bool) {
	k := in.next()
	if len(h.real) == 0 {
		h.logf("(no follower)")
		return 0, false
	}
	return h.order()[k%len(h.real)], true
}

func (h *logHarness) follow(kind, n, b int) {
	name, wait := b%4, time.Duration(b/4%3)*64*time.Millisecond
	id := h.ids
	h.ids++
	opts := []topic.Option[int]{topic.OnLoss(func(l topic.Loss[int]) {
		if l.Cause == topic.Skipped {
			h.runs[id] = append(h.runs[id], [2]uint64{l.Offset, l.Count})
		}
	})}
	desc := []string{[]string{"Next", "Last", "At", "Earliest"}[kind]}
	switch kind {
	case 1:
		opts = append(opts, topic.Replay[int](topic.Last(n)))
		desc[0] = fmt.Sprintf("Last(%d)", n)
	case 2:
		opts = append(opts, topic.Replay[int](topic.At(uint64(n))))
		desc[0] = fmt.Sprintf("At(%d)", n)
	case 3:
		opts = append(opts, topic.Replay[int](topic.Earliest()))
	}
	nm := ""
	if name > 0 {
		nm = fmt.Sprint("n", name)
		opts = append(opts, topic.Name[int](nm))
		desc = append(desc, fmt.Sprintf("Name(%q)", nm))
		if wait > 0 {
			opts = append(opts, topic.AckWait[int](wait))
			desc = append(desc, fmt.Sprintf("AckWait(%v)", wait))
		}
	} else {
		wait = 0
	}
	h.logf("f%d := Follow(%s)", id, strings.Join(desc, ", "))
	var f *topic.Follower[int]
	msg, panicked := panicMessage(func() { f = h.b.Follow(opts...) })
	if ok := h.ref.follow(id, kind, n, nm, wait); ok == panicked {
		h.failf("Follow panicked %v (%q), the model says %v", panicked, msg, !ok)
	}
	if !panicked {
		h.real[id] = f
	}
}

func (h *logHarness) read(id, n int) {
	buf := make([]topic.Record[int], n)
	k := h.real[id].Read(buf)
	got := buf[:k]
	for i := range got {
		got[i].Time = got[i].Time.Round(0)
		got[i].Time = got[i].Time.AddDate(0, 0, 0)
	}
	want := h.ref.read(id, n)
	h.logf("f%d.Read(%d): %s", id, n, logShow(got))
	if !slices.EqualFunc(got, want, func(x, y topic.Record[int]) bool {
		return x.Offset == y.Offset && x.Value == y.Value && x.Skipped == y.Skipped
	}) {
		h.failf("f%d.Read(%d) = %s, want %s", id, n, logShow(got), logShow(want))
	}
}

func (h *logHarness) commit(id int, o uint64) {
	h.logf("f%d.Commit(%d)", id, o)
	msg, panicked := panicMessage(func() { h.real[id].Commit(o) })
	if ok := h.ref.commit(id, o); ok == panicked {
		h.failf("Commit(%d) panicked %v (%q), the model says %v", o, panicked, msg, !ok)
	}
}

func (h *logHarness) readLog(from uint64, n int) {
	got, next, skipped := h.b.Read[int](from, n)
	want, wnext, wskipped := h.ref.readLog(from, n)
	h.logf("Read(%d, %d): %s next %d skipped %d", from, n, logShow(got), next, skipped)
	same := len(got) == len(want) && next == wnext && skipped == wskipped
	for i := 0; same && i < len(got); i++ {
		same = got[i].Offset == want[i].Offset && got[i].Value == want[i].Value
	}
	if !same {
		h.failf("Read(%d, %d) = %s next %d skipped %d, want %s next %d skipped %d",
			from, n, logShow(got), next, skipped, logShow(want), wnext, wskipped)
	}
}

// check compares the followers' positions, commits and skipped counts, and
// the runs OnLoss was told.
func (h *logHarness) check() {
	stats := map[string]topic.SubscriptionStats{}
	named := 0
	for _, st := range h.b.Subscriptions() {
		if st.Name != "" {
			stats[st.Name] = st
			named++
		}
	}
	for _, id := range h.order() {
		rf, f := h.ref.followers[id], h.real[id]
		if got, want := f.Offset(), rf.next(); got != want && !rf.closed {
			h.failf("f%d.Offset() = %d, want %d", id, got, want)
		}
		c, ok := f.Committed()
		if wc := rf.committed; ok != (wc > 0) || ok && c != wc-1 {
			h.failf("f%d.Committed() = %d, %v, want %d", id, c, ok, int64(wc)-1)
		}
		if !slices.Equal(h.runs[id], rf.runs) {
			h.failf("f%d: OnLoss told the skipped runs %v, want %v", id, h.runs[id], rf.runs)
		}
		if rf.name != "" && !rf.closed {
			st, ok := stats[rf.name]
			if !ok || st.Lost.Skipped != rf.lost || st.Follower == nil || st.Follower.Offset != rf.next() {
				h.failf("f%d (%s): stats %+v, want Skipped %d at %d", id, rf.name, st, rf.lost, rf.next())
			}
		}
	}
	live := 0
	for _, l := range h.ref.live {
		if l {
			live++
		}
	}
	if named != live {
		h.failf("%d named followers listed, want %d", named, live)
	}
}

func logShow(recs []topic.Record[int]) string {
	var s []string
	for _, r := range recs {
		x := fmt.Sprintf("%d:%d", r.Offset, r.Value)
		if r.Skipped > 0 {
			x = fmt.Sprintf("(+%d)%s", r.Skipped, x)
		}
		s = append(s, x)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// logSeeds cover each rule once.
var logSeeds = [][]byte{
	// Follow from the earliest, publish past retention, read: a skip told
	// once, on the first record after the gap.
	{3, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 2, 4, 0, 4},
	// A named follower reads, commits, closes; another resumes; a commit
	// of an offset never read; a seek back and forward; Broker.Read.
	{0, 0, 0, 3, 3, 0, 1, 4, 0, 2, 6, 0, 1, 6, 0, 9, 7, 0, 3, 0, 0, 1, 4, 0, 3, 5, 0, 0, 4, 0, 4, 7, 255, 0, 5},
	// Two followers with the same live name.
	{3, 0, 0, 2, 3, 0, 0, 2, 0, 0, 4, 0, 1, 4, 1, 1},
}

func FuzzLogMatchesReference(f *testing.F) {
	for _, s := range logSeeds {
		f.Add(s, uint8(4))
	}
	for seed := range uint64(4) {
		f.Add(fuzzRandomInput(rand.New(rand.NewPCG(seed, 0x106))), uint8(seed*3+1))
	}
	f.Fuzz(func(t *testing.T, data []byte, count uint8) {
		logRun(t, data, int(count%16)+1)
	})
}

func TestLogMatchesReferenceRandom(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 40
	}
	for seed := range uint64(n) {
		logRun(t, fuzzRandomInput(rand.New(rand.NewPCG(seed, 0x10c))), int(seed%9)+1)
	}
	for _, s := range logSeeds {
		logRun(t, s, 4)
	}
}

// panicMessage calls f and reports whether it panicked, and with what.
func panicMessage(f func()) (msg string, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			msg, panicked = fmt.Sprint(r), true
		}
	}()
	f()
	return "", false
}
