package topic

import (
	"cmp"
	"encoding/json"
	"reflect"
	"slices"
)

// LogStats describes the log of one retained type at one moment.
type LogStats struct {
	Type      reflect.Type // T of Retain[T] or RetainLatest[T, K]
	Retention Retention    // its bound, as declared
	Keyed     bool         // declared by RetainLatest: it keeps the latest value of each key
	Oldest    uint64       // the offset of the oldest value kept; Next if none is
	Next      uint64       // the offset the next publication gets: how many there have been
	Kept      int          // the values kept: Next-Oldest for a ring, the keys kept for a keyed log
}

// MarshalJSON encodes st with readable names, the type as printed and the
// age bound as a duration ("1m0s", "0s" for none).
//
//	{"type":"main.Price","count":1000,"age":"0s","no_time":false,"keyed":true,
//	 "oldest":12,"next":40,"kept":3}
func (st LogStats) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type   string `json:"type"`
		Count  int    `json:"count"`
		Age    string `json:"age"`
		NoTime bool   `json:"no_time"`
		Keyed  bool   `json:"keyed"`
		Oldest uint64 `json:"oldest"`
		Next   uint64 `json:"next"`
		Kept   int    `json:"kept"`
	}{typeName(st.Type), st.Retention.Count, st.Retention.Age.String(), st.Retention.NoTime, st.Keyed, st.Oldest, st.Next, st.Kept})
}

// logsLocked returns the log of every retained type, with mu held.
func (b *Broker) logsLocked() []*logCore {
	var logs []*logCore
	for _, e := range b.all {
		if c := e.log.Load(); c != nil && c.rec != e { // the entry of T, not of Record[T]
			logs = append(logs, c)
		}
	}
	return logs
}

// Logs returns a snapshot of the log of every retained type, ordered by
// type (as printed); none after Shutdown.
//
// It takes the broker's lock while it lists the logs, then reads each
// log's offsets atomically, without its sequencing point: it never delays
// a publication of a type retained by Retain. A log of RetainLatest is
// read under its sequencing point, as a replay of it is, and trimmed of
// the values older than its age bound. Of a ring with an age bound, the
// oldest values may still count as kept for a while after they are past
// the bound, until a publication or a read trims them; once they all are,
// none counts.
func (b *Broker) Logs() []LogStats {
	b.mu.Lock()
	var logs []*logCore
	if !b.closed {
		logs = b.logsLocked()
	}
	b.mu.Unlock()
	out := make([]LogStats, len(logs))
	for i, c := range logs {
		out[i] = c.impl.(logStatser).logStats()
	}
	slices.SortFunc(out, func(x, y LogStats) int { return cmp.Compare(x.Type.String(), y.Type.String()) })
	return out
}

// A logStatser is a *logOf[T], seen without T.
type logStatser interface{ logStats() LogStats }

func (l *logOf[T]) logStats() LogStats {
	st := LogStats{Type: reflect.TypeFor[T](), Retention: l.limit, Keyed: l.keyed != nil}
	if l.keyed != nil {
		l.mu.Lock()
		l.keyed.trim(l.oldest(l.stamp())) // what has aged out is not kept
		st.Next = l.mu.tail()
		st.Oldest = st.Next
		if o, ok := l.keyed.oldestOffset(); ok {
			st.Oldest = o
		}
		st.Kept = l.keyed.size()
		l.mu.Unlock()
		return st
	}
	st.Next = l.mu.tail()
	l.agedOut(st.Next) // if all have aged out, none is kept
	st.Oldest = l.head(st.Next)
	st.Kept = int(st.Next - st.Oldest)
	return st
}
