package topic_test

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic"
)

// gVal is published by publisher P as its Seq-th value.
type gVal struct{ P, Seq int }

// checkRun checks records read in offset order from one log: offsets
// strictly increase, each gap is what the record after it says was skipped
// (when skips is set), times do not go back, and each publisher's values
// come in the order it published them. It returns the records and skipped
// values counted.
func checkRun(t *testing.T, what string, recs []topic.Record[gVal], skips bool) (n, skipped uint64) {
	t.Helper()
	prev := int64(-1)
	var last time.Time
	seq := map[int]int{}
	for i, rec := range recs {
		if i > 0 || skips {
			gap := int64(rec.Offset) - prev - 1
			if skips && gap != int64(rec.Skipped) || !skips && gap != 0 {
				t.Errorf("%s: offset %d after %d, told %d skipped", what, rec.Offset, prev, rec.Skipped)
				return
			}
		}
		if rec.Time.Before(last) {
			t.Errorf("%s: offset %d has time %v, before %v of offset %d", what, rec.Offset, rec.Time, last, prev)
			return
		}
		if s, ok := seq[rec.Value.P]; ok && rec.Value.Seq <= s {
			t.Errorf("%s: publisher %d's value %d at offset %d after its value %d", what, rec.Value.P, rec.Value.Seq, rec.Offset, s)
			return
		}
		seq[rec.Value.P] = rec.Value.Seq
		prev, last = int64(rec.Offset), rec.Time
		skipped += rec.Skipped
	}
	return uint64(len(recs)), skipped
}

// Publishers append while subscriptions sent to in order (of T and of
// Record[T], with a replay) come and go, a follower follows and a reader
// reads, over and over: the follower reads every offset once (or is told it
// skipped it), times follow offsets, each publisher's values keep their
// order, and every subscription sent to in order receives a gapless run of
// offsets from its replay on.
func TestPublishersWithOrderedSubscriptionsComingAndGoing(t *testing.T) {
	for _, r := range []topic.Retention{
		{Count: 8},
		{Count: 100},
		{Count: 128, NoTime: true},
		{Count: 1 << 12},
	} {
		t.Run(fmt.Sprintf("count=%d,notime=%t", r.Count, r.NoTime), func(t *testing.T) {
			t.Parallel()
			const publishers, perPublisher = 4, 10000
			const total = publishers * perPublisher
			var b topic.Broker
			b.Retain[gVal](r)
			f := b.Follow[gVal](topic.Replay[gVal](topic.Earliest()))
			var followed []topic.Record[gVal]
			var wg sync.WaitGroup
			wg.Go(func() {
				buf := make([]topic.Record[gVal], 16)
				for f.Offset() < total {
					n := f.Read(buf)
					followed = append(followed, buf[:n]...)
				}
			})
			stop := make(chan struct{})
			// Records, sent in order under the sequencing point.
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					ch, cancel := b.Subscribe(topic.Buffer[topic.Record[gVal]](1<<16), topic.Replay[topic.Record[gVal]](topic.Last(3)))
					var recs []topic.Record[gVal]
				receive:
					for len(recs) < 50 {
						select {
						case rec := <-ch:
							recs = append(recs, rec)
						case <-stop:
							break receive
						}
					}
					cancel()
					for rec := range ch {
						recs = append(recs, rec)
					}
					checkRun(t, fmt.Sprint("record subscription ", i), recs, false)
				}
			})
			// Values of T, sent in order: each publisher's come gapless.
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					ch, cancel := b.Subscribe(topic.Buffer[gVal](1 << 16))
					seq := map[int]int{}
					for n := 0; n < 50; n++ {
						var v gVal
						select {
						case v = <-ch:
						case <-stop:
							n = 50
							continue
						}
						if s, ok := seq[v.P]; ok && v.Seq != s+1 {
							t.Errorf("subscription %d: publisher %d's value %d after its value %d", i, v.P, v.Seq, s)
						}
						seq[v.P] = v.Seq
					}
					cancel()
				}
			})
			// Reads of the log, without subscribing.
			wg.Go(func() {
				var from uint64
				for from < total {
					recs, next, skipped := b.Read[gVal](from, 32)
					if len(recs) > 0 && recs[0].Offset != from+skipped {
						t.Errorf("Read from %d: first offset %d, skipped %d", from, recs[0].Offset, skipped)
					}
					checkRun(t, fmt.Sprint("Read from ", from), recs, false)
					from = next
				}
			})
			var pubs sync.WaitGroup
			for p := range publishers {
				pubs.Go(func() {
					for i := range perPublisher {
						b.Publish(gVal{p, i})
					}
				})
			}
			pubs.Wait()
			close(stop)
			wg.Wait()
			f.Close()
			n, skipped := checkRun(t, "follower", followed, true)
			if n+skipped != total {
				t.Errorf("follower read %d and skipped %d of %d", n, skipped, total)
			}
			if st := b.Logs()[0]; st.Next != total || st.Kept != min(r.Count, total) {
				t.Errorf("log %+v, want next %d and %d kept", st, total, min(r.Count, total))
			}
			// What is kept reads back whole, in order.
			recs, next, _ := b.Read[gVal](0, r.Count)
			if next != total || len(recs) != min(r.Count, total) {
				t.Errorf("Read of what is kept: %d records, next %d", len(recs), next)
			}
			checkRun(t, "what is kept", recs, false)
		})
	}
}

// loneOrder checks, as a reader of a subscription of gVal receives them, that
// each publisher's values keep their order.
type loneOrder struct {
	seq map[int]int
	bad string
}

func (o *loneOrder) see(v gVal) {
	if o.seq == nil {
		o.seq = map[int]int{}
	}
	if s, ok := o.seq[v.P]; ok && v.Seq <= s && o.bad == "" {
		o.bad = fmt.Sprintf("publisher %d's value %d after its value %d", v.P, v.Seq, s)
	}
	o.seq[v.P] = v.Seq
}

// A lone plain subscription of a retained type, and a lone one of its
// records (the routes sendOrderedOne sends to), made and cancelled over and
// over while publishers publish: nothing is sent to either after its cancel
// (which closes its channel: a send would panic), each receives each
// publisher's values in order, and the records' offsets increase.
func TestLoneOrderedSubscriptionsCancelledWhilePublishing(t *testing.T) {
	const publishers = 4
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	b := new(topic.Broker)
	b.Retain[gVal](topic.Retention{Count: 64})
	stop := make(chan struct{})
	var pubs sync.WaitGroup
	for p := range publishers {
		pubs.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				b.Publish(gVal{P: p, Seq: i})
			}
		})
	}
	defer func() { close(stop); pubs.Wait() }()
	for round := range rounds {
		n := round % 4 // the buffer, 0 included: a send with no receiver is a drop
		ch, cancel := b.Subscribe(topic.Buffer[gVal](n))
		rch, rcancel := b.Subscribe(topic.Buffer[topic.Record[gVal]](n))
		var readers sync.WaitGroup
		var order, rorder loneOrder
		var got, rgot int
		readers.Go(func() {
			for v := range ch {
				order.see(v)
				if got++; got == round%7 {
					cancel() // by its reader, mid-stream
				}
			}
		})
		readers.Go(func() {
			prev := int64(-1)
			for rec := range rch {
				rorder.see(rec.Value)
				if int64(rec.Offset) <= prev && rorder.bad == "" {
					rorder.bad = fmt.Sprintf("offset %d after %d", rec.Offset, prev)
				}
				prev = int64(rec.Offset)
				if rgot++; rgot == round%5 {
					rcancel()
				}
			}
		})
		if round%3 == 0 {
			runtime.Gosched()
		}
		cancel() // by another goroutine, concurrently
		rcancel()
		readers.Wait()
		if order.bad != "" || rorder.bad != "" {
			t.Fatalf("round %d: values: %s; records: %s", round, order.bad, rorder.bad)
		}
	}
}

// publishGVals publishes each values of gVal from each of publishers
// goroutines, in parallel, and returns once all are published.
func publishGVals(b *topic.Broker, publishers, each int) {
	var pubs sync.WaitGroup
	for p := range publishers {
		pubs.Go(func() {
			for i := range each {
				b.Publish(gVal{P: p, Seq: i})
			}
		})
	}
	pubs.Wait()
}

// A lone plain subscription of a retained type, alone or with one of its
// records, whose buffers fill while publishers publish in parallel: each
// drop is counted once, Full, and each publication once in Matched; the log
// counts each publication once.
func TestLoneOrderedSubscriptionsCountEachDropOnce(t *testing.T) {
	const publishers, each = 8, 2000
	for _, c := range []struct {
		n       int
		records bool
	}{{0, true}, {1, true}, {100, true}, {0, false}, {1, false}, {100, false}} {
		n := c.n
		b := new(topic.Broker)
		b.Retain[gVal](topic.Retention{Count: 32})
		_, cancel := b.Subscribe(topic.Name[gVal]("values"), topic.Buffer[gVal](n))
		defer cancel()
		if c.records {
			_, rcancel := b.Subscribe(topic.Name[topic.Record[gVal]]("records"), topic.Buffer[topic.Record[gVal]](n))
			defer rcancel()
		}
		publishGVals(b, publishers, each)
		const total = publishers * each
		for _, st := range b.Subscriptions() {
			want := topic.Lost{Full: uint64(total - n)}
			if st.Sent != uint64(n) || st.Lost != want || st.Matched != total || st.Queued != n {
				t.Errorf("buffer %d, records %t: %s: Sent %d, Queued %d, Matched %d, lost %+v; want Sent %d, Matched %d, lost %+v",
					n, c.records, st.Name, st.Sent, st.Queued, st.Matched, st.Lost, n, total, want)
			}
		}
		for _, tp := range b.Topics() {
			if tp.Type == reflect.TypeFor[gVal]() && tp.Published != total {
				t.Errorf("buffer %d, records %t: Topics counts %d publications of gVal, want %d", n, c.records, tp.Published, total)
			}
		}
	}
}

// A plain subscription of a retained type, with no subscription of its
// records, while other sources of the type come and go (a second plain
// subscription, a From source, an interface subscription): whether it was
// alone on its route when a publication loaded it (publish sends to it
// directly) or not, or the route changed meanwhile, it receives every value
// once, in offset order, and counts each once.
func TestALoneOrderedSubscriptionReceivesEveryValueWhileOtherSourcesComeAndGo(t *testing.T) {
	const publishers, each = 4, 2000
	const total = publishers * each
	b := new(topic.Broker)
	b.Retain[gVal](topic.Retention{Count: 64})
	ch, cancel := b.Subscribe(topic.Name[gVal]("lone"), topic.Buffer[gVal](total))
	defer cancel()
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var c func()
			switch i % 3 {
			case 0:
				_, c = b.Subscribe(topic.Buffer[gVal](1))
			case 1:
				_, c = b.Subscribe(topic.From(func(v gVal) (gOther, bool) { return gOther{v.Seq}, true }))
			default:
				_, c = b.Subscribe[any]()
			}
			runtime.Gosched()
			c()
		}
	})
	publishGVals(b, publishers, each)
	close(stop)
	churn.Wait()
	var order loneOrder
	for range total {
		order.see(<-ch)
	}
	if order.bad != "" {
		t.Fatal(order.bad)
	}
	select {
	case v := <-ch:
		t.Fatalf("a value more than was published: %+v", v)
	default:
	}
	for _, st := range b.Subscriptions() {
		if st.Name == "lone" && (st.Sent != total || st.Matched != total || st.Lost != (topic.Lost{})) {
			t.Errorf("Sent %d, Matched %d, lost %+v; want %d, %d, none", st.Sent, st.Matched, st.Lost, total, total)
		}
	}
}

// A subscription with Replay from the earliest value, alone on its route
// (of gVal or of its records) while a publisher publishes: it receives
// offset 0 on, with no gap and no duplicate, whether its publications came
// from the replay or live (sendOrderedOne), made and cancelled over and
// over.
func TestLoneReplayedSubscriptionsHaveNoGapWhilePublishing(t *testing.T) {
	const total = 20000
	b := new(topic.Broker)
	b.Retain[gVal](topic.Retention{Count: total})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range total {
			b.Publish(gVal{Seq: i})
		}
	}()
	for round := 0; ; round++ {
		select {
		case <-done:
			if round < 2 {
				t.Logf("only %d rounds", round)
			}
			return
		default:
		}
		var seqs []int
		if round%2 == 0 {
			ch, cancel := b.Subscribe(topic.Replay[gVal](topic.Earliest()), topic.Buffer[gVal](total))
			for range round % 50 {
				runtime.Gosched()
			}
			cancel()
			for v := range ch {
				seqs = append(seqs, v.Seq)
			}
		} else {
			ch, cancel := b.Subscribe(topic.Replay[topic.Record[gVal]](topic.Earliest()), topic.Buffer[topic.Record[gVal]](total))
			for range round % 50 {
				runtime.Gosched()
			}
			cancel()
			for rec := range ch {
				if rec.Offset != uint64(rec.Value.Seq) {
					t.Fatalf("round %d: record of offset %d holds value %d", round, rec.Offset, rec.Value.Seq)
				}
				seqs = append(seqs, int(rec.Offset))
			}
		}
		for i, s := range seqs {
			if s != i {
				t.Fatalf("round %d: received %d at position %d (of %d): a gap or a duplicate", round, s, i, len(seqs))
			}
		}
	}
}

// A From source and a slow wildcard subscription, made before a publication
// of a retained type, receive it, while a lone plain subscription of the
// type, and one of its records, are made and cancelled concurrently (so that
// the route a publisher loaded before its guard section is not the one it
// finds inside): the route it sends live from (sendLive, if live) is the one
// it found inside.
func TestLiveSourcesMadeBeforeAPublicationReceiveItWhileTheRouteChanges(t *testing.T) {
	rounds := 2000
	if testing.Short() {
		rounds = 300
	}
	b := new(topic.Broker)
	b.Retain[gVal](topic.Retention{Count: 8})
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() { // churn
		for {
			select {
			case <-stop:
				return
			default:
			}
			ch, cancel := b.Subscribe(topic.Buffer[gVal](1))
			rch, rcancel := b.Subscribe(topic.Buffer[topic.Record[gVal]](1))
			runtime.Gosched()
			cancel()
			rcancel()
			for range ch {
			}
			for range rch {
			}
		}
	})
	bg.Go(func() { // other publishers
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b.Publish(gVal{P: 1, Seq: i})
		}
	})
	defer func() { close(stop); bg.Wait() }()
	for round := range rounds {
		marker := gVal{P: -1, Seq: round}
		var fromGot, recGot, wildGot atomic.Bool
		_, cancelF := b.Subscribe(topic.From(func(v gVal) (int, bool) {
			if v == marker {
				fromGot.Store(true)
			}
			return 0, false
		}))
		_, cancelR := b.Subscribe(topic.From(func(r topic.Record[gVal]) (int8, bool) {
			if r.Value == marker {
				recGot.Store(true)
			}
			return 0, false
		}))
		_, cancelW := b.Subscribe(topic.Buffer[any](0), topic.OnLoss(func(l topic.Loss[any]) {
			if l.Value == any(marker) {
				wildGot.Store(true)
			}
		}))
		b.Publish(marker)
		cancelF()
		cancelR()
		cancelW()
		if !fromGot.Load() || !recGot.Load() || !wildGot.Load() {
			t.Fatalf("round %d: the marker reached the From source of gVal: %v, of its records: %v, the wildcard: %v",
				round, fromGot.Load(), recGot.Load(), wildGot.Load())
		}
	}
}

// A From function of a retained type that calls runtime.Goexit, beside a
// lone plain subscription of the type and one of its records: they received
// the value in order before (with the sequencing point held), the From
// sources after it on the type's route still get it, and so do those of its
// records, live; the sequencing point is let go (the next publication goes
// through).
func TestAFromFunctionOfARetainedTypeCallingGoexit(t *testing.T) {
	b := new(topic.Broker)
	b.Retain[gVal](topic.Retention{Count: 8})
	marker := gVal{P: -1}
	ch, cancel := b.Subscribe(topic.Buffer[gVal](4))
	defer cancel()
	rch, rcancel := b.Subscribe(topic.Buffer[topic.Record[gVal]](4))
	defer rcancel()
	_, cancel1 := b.Subscribe(topic.From(func(v gVal) (int, bool) {
		if v == marker {
			runtime.Goexit()
		}
		return 0, false
	}))
	defer cancel1()
	var after, rec atomic.Int32
	_, cancel2 := b.Subscribe(topic.From(func(v gVal) (int8, bool) {
		after.Add(1)
		return 0, false
	}))
	defer cancel2()
	_, cancel3 := b.Subscribe(topic.From(func(r topic.Record[gVal]) (int16, bool) {
		rec.Add(1)
		return 0, false
	}))
	defer cancel3()
	var wg sync.WaitGroup
	wg.Go(func() { b.Publish(marker) })
	wg.Wait()
	if v := <-ch; v != marker {
		t.Errorf("the subscription received %v, want %v", v, marker)
	}
	if r := <-rch; r.Value != marker || r.Offset != 0 {
		t.Errorf("the records' subscription received %+v, want offset 0 of %v", r, marker)
	}
	if after.Load() != 1 {
		t.Errorf("the From source after the one calling Goexit got %d values, want 1", after.Load())
	}
	if rec.Load() != 1 {
		t.Errorf("the From source of the records got %d, want 1", rec.Load())
	}
	b.Publish(gVal{P: 1}) // would wait forever if the sequencing point were held
	if v := <-ch; v != (gVal{P: 1}) {
		t.Errorf("then received %v", v)
	}
}

// gOther is published, not retained, to reach a subscription of gVal
// through its From source.
type gOther struct{ N int }

// A lone plain subscription of a retained type whose channel is also fed,
// outside the sequencing point, by a From source of another type, so that
// its buffer fills between sendOrderedOne's check and its send, while a
// From source of the retained type comes and goes (so that the route
// changes between the publisher's load and its guard section): each
// publication of either type is counted once, Sent or Full.
func TestALoneOrderedSubscriptionFedFromElsewhereCountsEachDropOnce(t *testing.T) {
	const publishers, each = 4, 3000
	for _, n := range []int{0, 1, 16} {
		b := new(topic.Broker)
		b.Retain[gVal](topic.Retention{Count: 8})
		ch, cancel := b.Subscribe(topic.Name[gVal]("fed"), topic.Buffer[gVal](n),
			topic.From(func(o gOther) (gVal, bool) { return gVal{P: -1, Seq: o.N}, true }))
		stop := make(chan struct{})
		var churn sync.WaitGroup
		churn.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, c := b.Subscribe(topic.From(func(gVal) (int, bool) { return 0, false }))
				c()
			}
		})
		var readers sync.WaitGroup
		var got atomic.Uint64
		readers.Go(func() {
			for range ch {
				got.Add(1)
			}
		})
		var pubs sync.WaitGroup
		for p := range publishers {
			pubs.Go(func() {
				for i := range each {
					if p%2 == 0 {
						b.Publish(gVal{P: p, Seq: i})
					} else {
						b.Publish(gOther{i})
					}
				}
			})
		}
		pubs.Wait()
		close(stop)
		churn.Wait()
		var st topic.SubscriptionStats
		for _, s := range b.Subscriptions() {
			if s.Name == "fed" {
				st = s
			}
		}
		cancel()
		readers.Wait()
		const total = publishers * each
		if st.Sent+st.Lost.Full != total || st.Lost.Total() != st.Lost.Full || st.Matched != total || st.Sent < got.Load() {
			t.Errorf("buffer %d: Sent %d (received %d), Matched %d, lost %+v, of %d publications", n, st.Sent, got.Load(), st.Matched, st.Lost, total)
		}
	}
}
