package topic

// A follower's read path: the records from its position on, read from the
// ring (or a keyed log) without the sequencing point, what it skipped told,
// and the position moved.

import "github.com/seedaa7df82c/topic/internal/ring"

// read reads up to len(buf) records from the position on, without waiting.
func (f *follower[T]) read(buf []Record[T]) int {
	if len(buf) == 0 {
		return 0
	}
	n := f.readAt(buf, true)
	bump(&f.took, uint64(n)) // its reader's: one writer at a time
	return n
}

// readAt is read, which given no room reads nothing but does the rest of a
// read: it skips to the oldest value kept, counting what it skipped (see
// catchUp). Without redo, it does not apply a re-read AckWait has made due:
// that is left to the read that returns the records, so that a commit
// before it still spares them.
func (f *follower[T]) readAt(buf []Record[T], redo bool) int {
	l := f.l
	if l == nil || f.ended.Load() {
		return 0
	}
	if l.keyed != nil {
		return f.readKeyed(buf)
	}
	for {
		from := f.pos.Load()
		if from != f.lastEnd {
			f.skipped = 0 // moved by a Seek
		}
		o := from
		if f.ack != nil {
			o = f.ack.start(l.now(), o, f.committed.Load(), redo)
		}
		first := o
		// Without the sequencing point: tail, then the ring (see logOf).
		tail := l.mu.tail()
		r := l.ring.Load()
		var skipped uint64
		if h := l.head(tail); o < h {
			skipped, o = h-o, h
		}
		var now int64
		if l.limit.Age > 0 {
			now = l.stamp()
		}
		n := 0
		s := f.slot
		if o != f.lastEnd || r.Size() != f.size {
			s = r.Index(o)
		}
		for o < tail && n < len(buf) { // s is the slot of o
			run, st := r.PinAt(o, s)
			if st != ring.OK {
				if n > 0 {
					break // trimmed since, after what was read: the next read tells
				}
				skipped, o, s = skipped+1, o+1, r.Next(s)
				continue
			}
			// A run of o's chunk, under one count (see ring.Ring).
			end, pinned := min(tail, o+run, o+uint64(len(buf)-n)), s
			for ; o < end; o, s = o+1, s+1 {
				c := r.Cell(s)
				if l.expired(c.Nanos, now) {
					if n > 0 {
						break
					}
					skipped++
					continue
				}
				// Field by field: a composite literal is built on the
				// stack and then copied, and the copy's 16-byte loads
				// wait for the 8-byte stores that built it.
				p := &buf[n]
				p.Offset, p.Value, p.Skipped = o, c.Value, 0
				if !f.values {
					p.Time = l.timeOf(c.Nanos)
				}
				n++
			}
			r.Unpin(pinned)
			if s == r.Size() {
				s = 0 // a run ends at the ring's end at the latest
			}
			if o < end {
				break // an expired value after what was read: the next read tells
			}
		}
		if n > 0 || o != from { // else nothing to move or record
			read := o
			if n > 0 {
				read = buf[0].Offset
			}
			if !f.move(from, o, read) {
				continue // a Seek moved the position meanwhile: read from there
			}
		}
		f.lastEnd, f.size, f.slot = o, r.Size(), s
		if skipped > 0 {
			f.tell(first, skipped)
		}
		if n == 0 {
			return 0
		}
		buf[0].Skipped, f.skipped = f.skipped, 0
		return n
	}
}

// tell counts and reports the n values skipped from offset first on: in a
// re-read, only those it owes (see start), as runs; the rest were told when
// they were first skipped.
func (f *follower[T]) tell(first, n uint64) {
	if a := f.ack; a != nil {
		if runs, ok := a.owedIn(first, first+n); ok {
			for _, r := range runs {
				f.skipped += r.end - r.first
				f.skip(r.first, r.end-r.first)
			}
			return
		}
	}
	f.skipped += n
	f.skip(first, n)
}

// move moves the position from from to end, unless a Seek moved it
// meanwhile, for a read of the offsets from first up to end (none if first
// is end), and records that read. The move is one step under the lock a
// Seek takes to move the position and count itself (mu, or the ackState's
// with AckWait): so a Seek is ordered before or after the move, and the
// count of Seeks the move records (seen) tells the reader of any Seek after
// it (see current), one to where it left the position included. A Seek to
// where the read started, before the move, is one the read obeyed. With
// AckWait the record of the read is part of the step: a Seek is ordered
// before or after a whole read (one that stored the position the read
// started from, after a re-read moved the read back, is told by its count),
// and the reads it forgets are all those before it. What is committed is
// not recorded: Commit stores committed before it takes the lock to forget
// reads, so a read recorded after that store leaves out what it committed,
// and one recorded before is forgotten by it.
func (f *follower[T]) move(from, end, first uint64) bool {
	a := f.ack
	if a != nil {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.seeks != a.seen {
			return false // a Seek since start: read from where it moved to
		}
	} else {
		f.mu.Lock()
		defer f.mu.Unlock()
	}
	if f.pos.Load() != from {
		return false
	}
	f.pos.Store(end)
	f.seen = f.seeks.Load()
	if first == end {
		return true
	}
	if end > f.delivered.Load() {
		f.delivered.Store(end)
	}
	if a != nil {
		if c := f.committed.Load(); c < end {
			a.readLocked(max(first, c), end, f.l.now())
		}
	}
	return true
}

// readKeyed is read of a log of RetainLatest, which it reads with its
// sequencing point held, and which skips nothing (see RetainLatest).
func (f *follower[T]) readKeyed(buf []Record[T]) int {
	l := f.l
	for {
		from := f.pos.Load()
		o := from
		if f.ack != nil {
			o = f.ack.start(l.now(), o, f.committed.Load(), true)
		}
		l.mu.Lock()
		n, next := l.keyed.read(o, l.mu.tail(), l.oldest(l.stamp()), buf, l)
		l.mu.Unlock()
		// The read, for AckWait, runs from o: the offsets up to the first
		// record are of values replaced since, which a re-read finds
		// replaced too, and so the reads of one instant are one run (see
		// readMark) although the offsets they return have gaps.
		end, first := max(next, o), max(next, o)
		if n > 0 {
			first = o
		}
		if !f.move(from, end, first) {
			continue // a Seek moved the position meanwhile: read from there
		}
		f.lastEnd = end // for current: a keyed read uses it for nothing else
		return n
	}
}
