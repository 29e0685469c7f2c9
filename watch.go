package topic

import (
	"cmp"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"time"
)

// An Incident is what one subscription lost, and what one handler retried
// and dead-lettered, in one interval of a Watch: counts, never values.
type Incident struct {
	Type         reflect.Type // the subscription's type, T of Subscribe[T]
	Name         string       // as given by the Name option, or empty
	Lost         Lost         // the values it lost in the interval, by cause (Skipped included)
	Matched      uint64       // what reached it in the interval (see SubscriptionStats.Matched): Lost is a share of it
	Retried      uint64       // the retries its handler made in the interval
	DeadLettered uint64       // the values its handler dead-lettered in the interval
	// Ended says the subscription ended (was cancelled, stopped or closed
	// by Shutdown), its counts are final, and this is its last incident:
	// one a subscription that had an incident before gets, with the counts
	// since (none, maybe).
	Ended bool
	// Made is where the subscription was made (see SubscriptionStats.Made).
	Made string
}

// Lossy reports whether i lost a value or dead-lettered one: what an alert
// on loss fires on. An incident of retries alone (a handler whose later
// attempt succeeded) is not lossy, nor the last incident of a subscription
// that ended with nothing lost since its incident before.
func (i Incident) Lossy() bool { return i.Lost.Total() > 0 || i.DeadLettered > 0 }

// LogValue makes an Incident a group of its type, its name, the counts
// that are not zero and where the subscription was made, so that log/slog
// writes it as one readable line:
//
//	level=WARN msg="topic: values lost" incident.type=main.Order incident.name=billing incident.full=1523 incident.matched=40210 incident.made=example.com/shop/billing.go:42
func (i Incident) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 7)
	attrs = append(attrs, slog.String("type", typeName(i.Type)))
	if i.Name != "" {
		attrs = append(attrs, slog.String("name", i.Name))
	}
	for c := Full; int(c) <= len(causeNames); c++ {
		if n := i.Lost.Of(c); n > 0 {
			attrs = append(attrs, slog.Uint64(c.String(), n))
		}
	}
	if i.Matched > 0 {
		attrs = append(attrs, slog.Uint64("matched", i.Matched))
	}
	if i.Retried > 0 {
		attrs = append(attrs, slog.Uint64("retried", i.Retried))
	}
	if i.DeadLettered > 0 {
		attrs = append(attrs, slog.Uint64("dead_lettered", i.DeadLettered))
	}
	if i.Ended {
		attrs = append(attrs, slog.Bool("ended", true))
	}
	if i.Made != "" {
		attrs = append(attrs, slog.String("made", i.Made))
	}
	return slog.GroupValue(attrs...)
}

// Watch calls f, every interval every, with an Incident for each
// subscription of the broker that lost a value or whose handler retried or
// dead-lettered one since the interval before: every loss of every cause,
// of subscriptions that ended in the interval too, in one place. The counts
// from before Watch are not reported. f is called on a goroutine of its
// own, one Incident at a time, ordered by type (as printed), then name; it
// may call the broker. Logging every loss, and the retries apart:
//
//	stop := b.Watch(time.Second, func(i topic.Incident) {
//		if i.Lossy() {
//			slog.Warn("topic: values lost", "incident", i)
//		} else if i.Retried > 0 {
//			slog.Info("topic: values retried", "incident", i)
//		}
//	})
//
// It is rate-limited by construction: a subscription losing a million
// values a second gives one Incident an interval, with the count.
//
// Cost: nothing on the delivered path nor on the loss path; it reads the
// counts the broker keeps anyway. A cancel notes the subscription for each
// Watch, so that its last counts are reported: final once the cancel has
// returned, but for a From function still running then, whose panic
// (Failed) would be counted after. Each interval costs one
// snapshot of the subscriptions: 3.6 ms with 10,000 of them, 100 of which
// lost a value (BenchmarkWatch), so an interval of a second takes under 1%
// of a core.
//
// A subscription's counts are final once it has ended and its handler's
// worker or its channel follower's pump, if any, has ended too: a handler
// stopped while it retries goes on counting. Until then, each interval
// reports what it counted, and the incident that finds them final has
// Ended set.
//
// Watching ends when stop is called, which reports what was not reported
// yet, then returns, without waiting for workers still counting; f is not
// called after that. Called from f, stop returns at once and f is not
// called again. Watching also ends by itself after Shutdown, once its drain
// is over and every count is final (looked at every 10 ms meanwhile), with
// the final counts (values published after that, counted as Closed, are
// not reported); stop then only returns. stop may be called more than once. Watch panics if
// every is not positive or f is nil. A panic in f is not recovered: it ends
// the program, as on any goroutine.
func (b *Broker) Watch(every time.Duration, f func(Incident)) (stop func()) {
	if every <= 0 {
		panic("topic: Watch interval must be positive")
	}
	if f == nil {
		panic("topic: Watch function is nil")
	}
	w := &watch{b: b, f: f, seen: map[subscriber]watched{}, over: map[subscriber]bool{}, quit: make(chan struct{}), done: make(chan struct{})}
	b.mu.Lock()
	b.watches = append(b.watches, w)
	b.mu.Unlock()
	w.scan(true, false) // the counts from before Watch
	go w.run(every)
	var once sync.Once
	return func() {
		if w.calling() {
			w.halt() // from f: return at once, f is not called again
			once.Do(func() { close(w.quit) })
			return
		}
		once.Do(func() { close(w.quit) })
		<-w.done
	}
}

// A watch is a Watch's state, held by its goroutine.
type watch struct {
	b    *Broker
	f    func(Incident)
	seen map[subscriber]watched // the counts each subscription had at the last scan
	over map[subscriber]bool    // given their last incident by a final scan
	quit chan struct{}          // closed by stop
	done chan struct{}          // closed when the goroutine ends
	// ended lists the subscriptions that ended since the last scan.
	// Guarded by the broker's mu.
	ended []subscriber

	mu     sync.Mutex
	in     bool   // f is being called; guarded by mu
	id     uint64 // the goroutine calling f; guarded by mu
	halted bool   // stop was called from f: f is not called again; guarded by mu
}

// watched are the counts of one subscription at one scan, and whether it
// has had an incident.
type watched struct {
	lost                  Lost
	matched               uint64
	retried, deadLettered uint64
	reported              bool
}

// run scans every interval until stop, or the end of Shutdown's drain, then
// scans once more, for the counts not reported yet.
func (w *watch) run(every time.Duration) {
	defer close(w.done)
	defer func() {
		w.b.mu.Lock()
		w.b.watches = slices.DeleteFunc(w.b.watches, func(x *watch) bool { return x == w })
		w.b.mu.Unlock()
	}()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			w.scan(false, false)
			continue
		case <-w.b.Done():
			w.b.mu.Lock()
			d := w.b.drain
			w.b.mu.Unlock()
			select {
			case <-d.done:
			case <-w.quit:
			}
		case <-w.quit:
		}
		w.b.mu.Lock()
		sealed := w.b.final != nil
		w.b.mu.Unlock()
		// The last scans: until the counts of every subscription ended are
		// final (handlers' workers and followers' pumps may still count
		// after a cancel or the seal), or until stop, then one more.
		again := time.NewTicker(min(every, watchSettle))
		defer again.Stop()
		for w.scan(false, sealed) > 0 {
			select {
			case <-again.C:
			case <-w.quit:
				w.scan(false, sealed)
				return
			}
		}
		return
	}
}

// watchSettle is how often a watch that is ending looks again at the
// subscriptions whose counts are not final yet.
const watchSettle = 10 * time.Millisecond

// halt stops f from being called again.
func (w *watch) halt() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.halted = true
}

// calling reports whether stop is called from f, on the watch's goroutine.
func (w *watch) calling() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.in && w.id == goid()
}

// scan reads every subscription's counts and calls f with what changed
// since the last scan, unless first, when it only takes them; final is the
// scan of the counts Shutdown left, after which every subscription has
// ended. It returns how many subscriptions ended whose counts are not
// final yet: those are scanned again.
func (w *watch) scan(first, final bool) int {
	b := w.b
	b.mu.Lock()
	live := b.final
	if live == nil {
		live = b.liveLocked()
	}
	ended := w.ended
	w.ended = nil
	b.mu.Unlock()
	type item struct {
		typ string
		i   Incident
	}
	var items []item
	var carry []subscriber // ended, not settled: scanned again
	now := make(map[subscriber]bool, len(live))
	visit := func(s subscriber, ended bool) {
		if ended && !s.settled() {
			ended = false // its counts may still grow: report them, and look again
			carry = append(carry, s)
		}
		st := s.stats()
		cur := watched{lost: st.Lost, matched: st.Matched}
		if st.Handler != nil {
			cur.retried, cur.deadLettered = st.Handler.Retried, st.Handler.DeadLettered
		}
		prev, had := w.seen[s]
		if ended {
			delete(w.seen, s)
			if final {
				w.over[s] = true
			}
		} else {
			w.seen[s] = cur
		}
		if first {
			return
		}
		if !had {
			prev = watched{}
		}
		i := Incident{Type: st.Type, Name: st.Name, Made: st.Made, Lost: cur.lost.minus(prev.lost),
			Matched: cur.matched - min(prev.matched, cur.matched), Retried: cur.retried - prev.retried, DeadLettered: cur.deadLettered - prev.deadLettered, Ended: ended}
		if i.Lost.Total() > 0 || i.Retried > 0 || i.DeadLettered > 0 || ended && prev.reported {
			items = append(items, item{st.Type.String(), i})
			if !ended {
				cur.reported = true
				w.seen[s] = cur
			}
		} else if !ended {
			cur.reported = prev.reported
			w.seen[s] = cur
		}
	}
	for _, s := range live {
		if w.over[s] {
			continue // given its last incident in an earlier final scan
		}
		if _, had := w.seen[s]; final && !had && !s.wasSealed() {
			continue // stopped before Shutdown: reported as ended, or in ended
		}
		now[s] = true
		visit(s, final)
	}
	for _, s := range ended {
		if !now[s] {
			now[s] = true
			visit(s, true) // ended since the last scan: its last counts
		}
	}
	for s := range w.seen {
		if !now[s] {
			visit(s, true) // not live, not told it ended: closed by Shutdown
		}
	}
	if len(carry) > 0 {
		b.mu.Lock()
		w.ended = append(w.ended, carry...)
		b.mu.Unlock()
	}
	slices.SortStableFunc(items, func(x, y item) int {
		return cmp.Or(cmp.Compare(x.typ, y.typ), cmp.Compare(x.i.Name, y.i.Name))
	})
	w.mu.Lock()
	w.in, w.id = true, goid()
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.in = false
		w.mu.Unlock()
	}()
	for _, it := range items {
		w.mu.Lock()
		halted := w.halted
		w.mu.Unlock()
		if halted {
			break
		}
		w.f(it.i)
	}
	return len(carry)
}

// minus returns the counts of l less those of m, cause by cause.
func (l Lost) minus(m Lost) Lost {
	return Lost{
		Full: l.Full - m.Full, Evicted: l.Evicted - m.Evicted, Failed: l.Failed - m.Failed,
		Errored: l.Errored - m.Errored, Discarded: l.Discarded - m.Discarded,
		Closed: l.Closed - m.Closed, Skipped: l.Skipped - m.Skipped,
	}
}
