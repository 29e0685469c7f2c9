package topic_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

type feVal struct {
	P, N int
}

type feKey struct {
	K string
	V int
}

func feK(v feKey) string { return v.K }

func feShowKeyed(recs []topic.Record[feKey]) []string {
	var s []string
	for _, r := range recs {
		s = append(s, fmt.Sprintf("%s=%d@%d", r.Value.K, r.Value.V, r.Offset))
	}
	return s
}

func feReadAllKeyed(f *topic.Follower[feKey]) []topic.Record[feKey] {
	var all []topic.Record[feKey]
	buf := make([]topic.Record[feKey], 4)
	for {
		n := f.Read(buf)
		if n == 0 {
			return all
		}
		all = append(all, buf[:n]...)
	}
}

// A follower of a compacted log that starts at its earliest must read the
// current value of every key, like a replay does, however many
// publications there were: Count bounds keys, not values.
func TestFollowEdgeKeyedFollowerEarliestReadsEveryKey(t *testing.T) {
	var b topic.Broker
	b.RetainLatest(feK, topic.Retention{Count: 10})
	b.Publish(feKey{"c", 0})
	for i := 1; i <= 50; i++ {
		b.Publish(feKey{"a", i})
		b.Publish(feKey{"b", i})
	}
	want := []string{"c=0@0", "a=50@99", "b=50@100"}
	recs, _, _ := b.Read[feKey](0, 10)
	if got := feShowKeyed(recs); !slices.Equal(got, want) {
		t.Fatalf("Read: %v, want %v", got, want)
	}
	rep, cancel := b.Subscribe(topic.Buffer[topic.Record[feKey]](8), topic.Replay[topic.Record[feKey]](topic.Earliest()))
	defer cancel()
	if got := feShowKeyed(takeAll(rep)); !slices.Equal(got, want) {
		t.Errorf("Replay(Earliest): %v, want %v", got, want)
	}
	f := b.Follow(topic.Replay[feKey](topic.Earliest()))
	defer f.Close()
	if got := feShowKeyed(feReadAllKeyed(f)); !slices.Equal(got, want) {
		t.Errorf("Follow(Earliest): %v, want %v", got, want)
	}
	last := b.Follow(topic.Replay[feKey](topic.Last(3)))
	defer last.Close()
	if got := feShowKeyed(feReadAllKeyed(last)); !slices.Equal(got, want) {
		t.Errorf("Follow(Last(3)): %v, want %v", got, want)
	}
	at := b.Follow(topic.Replay[feKey](topic.At(0)))
	defer at.Close()
	if got := feShowKeyed(feReadAllKeyed(at)); !slices.Equal(got, want) {
		t.Errorf("Follow(At(0)): %v, want %v", got, want)
	}
}

// A durable follower with AckWait that started at Next and committed
// nothing must read again what it read, not what was published before it
// started.
func TestFollowEdgeAckWaitWithoutCommitRereadsOnlyWhatWasRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 5})
		for n := range 20 {
			b.Publish(fOrder{n})
		}
		var skips []topic.Loss[fOrder]
		f := b.Follow(topic.Name[fOrder]("w"), topic.AckWait[fOrder](time.Minute),
			topic.OnLoss(func(l topic.Loss[fOrder]) { skips = append(skips, l) }))
		defer f.Close()
		for n := 20; n < 23; n++ {
			b.Publish(fOrder{n})
		}
		buf := make([]topic.Record[fOrder], 10)
		if got := fOffsets(buf[:f.Read(buf)]); !slices.Equal(got, []uint64{20, 21, 22}) {
			t.Fatalf("first read %v", got)
		}
		time.Sleep(61 * time.Second)
		n := f.Read(buf)
		got := fOffsets(buf[:n])
		if !slices.Equal(got, []uint64{20, 21, 22}) || (n > 0 && buf[0].Skipped != 0) || len(skips) != 0 {
			sk := uint64(0)
			if n > 0 {
				sk = buf[0].Skipped
			}
			t.Errorf("after AckWait read %v (Skipped %d, OnLoss %+v), want 20 21 22 again, nothing skipped", got, sk, skips)
		}
	})
}

// A follower handler whose function panics on a value (no Retry: the value
// is lost, Errored) must commit it like any lost value; with AckWait it
// must not handle it again.
func TestFollowEdgeHandlerFollowerCommitsAPanickedValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 100})
		var calls []int
		stop := b.Handle(func(_ context.Context, v fOrder) error {
			calls = append(calls, v.N)
			if v.N == 0 {
				panic("boom")
			}
			return nil
		}, topic.Follow[fOrder](), topic.Name[fOrder]("h"), topic.AckWait[fOrder](time.Minute))
		b.Publish(fOrder{0})
		synctest.Wait()
		st := b.Subscriptions()[0]
		if st.Follower.Committed != 1 {
			t.Errorf("after the panicked value: committed %d, want 1 (lost values are committed)", st.Follower.Committed)
		}
		time.Sleep(2 * time.Minute)
		b.Publish(fOrder{1})
		synctest.Wait()
		if !slices.Equal(calls, []int{0, 1}) {
			t.Errorf("calls %v, want [0 1]: the lost value was handled again", calls)
		}
		stop()
	})
}

// The same without AckWait: a durable follower handler restarted under its
// name must not get the panicked (lost, counted Errored) value again.
func TestFollowEdgeHandlerFollowerPanickedValueNotRedeliveredOnResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 100})
		var calls []int
		f := func(_ context.Context, v fOrder) error {
			calls = append(calls, v.N)
			if v.N == 1 {
				panic("boom")
			}
			return nil
		}
		stop := b.Handle(f, topic.Follow[fOrder](), topic.Name[fOrder]("h"))
		b.Publish(fOrder{0})
		b.Publish(fOrder{1})
		synctest.Wait()
		stop()
		stop = b.Handle(f, topic.Follow[fOrder](), topic.Name[fOrder]("h"))
		synctest.Wait()
		stop()
		if !slices.Equal(calls, []int{0, 1}) {
			t.Errorf("calls %v, want [0 1]", calls)
		}
	})
}

// Broker.Follow of a Record type panics, and leaves no follower registered
// that no one can close.
func TestFollowEdgeFollowOfARecordTypeLeavesNothing(t *testing.T) {
	var b topic.Broker
	b.Retain[fOrder](topic.Retention{Count: 10})
	msg, panicked := panicMessage(func() {
		b.Follow(topic.Name[topic.Record[fOrder]]("r"))
	})
	if !panicked || !strings.HasPrefix(msg, "topic: Follow of topic.Record[") {
		t.Errorf("Follow[Record[fOrder]]: panicked %v: %q, want a topic: panic naming the record type", panicked, msg)
	}
	if n := len(b.Subscriptions()); n != 0 {
		t.Errorf("%d subscriptions listed after the Follow of a record type", n)
	}
	// the name must be free
	msg2, p2 := panicMessage(func() {
		f := b.Follow(topic.Name[fOrder]("r"))
		f.Close()
	})
	if p2 {
		t.Errorf("name still live: %s", msg2)
	}
}

// Shutdown: what is published after it is counted Closed on each follower,
// of T and of Record[T], pull, channel and handler.
func TestFollowEdgeShutdownCountsClosedOnEveryFollower(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 100})
		var onLoss atomic.Int64
		ol := func(l topic.Loss[fOrder]) {
			if l.Cause == topic.Closed {
				onLoss.Add(1)
			}
		}
		olr := func(l topic.Loss[topic.Record[fOrder]]) {
			if l.Cause == topic.Closed {
				onLoss.Add(1)
			}
		}
		b.Follow(topic.Name[fOrder]("pull"), topic.OnLoss(ol))
		b.Subscribe(topic.Follow[fOrder](), topic.Name[fOrder]("ch"), topic.OnLoss(ol))
		b.Subscribe(topic.Follow[topic.Record[fOrder]](), topic.Name[topic.Record[fOrder]]("chrec"), topic.OnLoss(olr))
		b.Handle(func(context.Context, fOrder) error { return nil }, topic.Follow[fOrder](), topic.Name[fOrder]("h"), topic.OnLoss(ol))
		b.Handle(func(context.Context, topic.Record[fOrder]) error { return nil }, topic.Follow[topic.Record[fOrder]](), topic.Name[topic.Record[fOrder]]("hrec"), topic.OnLoss(olr))
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.Publish(fOrder{1})
		b.Append(fOrder{2})
		synctest.Wait()
		subs := b.Subscriptions()
		if len(subs) != 5 {
			t.Errorf("%d subscriptions after Shutdown, want 5", len(subs))
		}
		for _, st := range subs {
			if st.Lost.Closed != 2 || st.Lost.Total() != 2 {
				t.Errorf("%s: lost %+v, want Closed 2", st.Name, st.Lost)
			}
		}
		if onLoss.Load() != 10 {
			t.Errorf("OnLoss told %d Closed, want 10", onLoss.Load())
		}
	})
}

// A channel follower's channel is closed once cancel returns, even while its
// pump is blocked sending; no send after.
func TestFollowEdgeChannelFollowerCancelWhilePumpBlocked(t *testing.T) {
	for i := range 200 {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 4})
		ch, cancel := b.Subscribe(topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Buffer[fOrder](i%3))
		for n := range 10 {
			b.Publish(fOrder{n})
		}
		// take a few, in order
		prev := -1
		for range i % 4 {
			v := <-ch
			if v.N <= prev {
				t.Fatalf("out of order: %d after %d", v.N, prev)
			}
			prev = v.N
		}
		done := make(chan struct{})
		go func() { cancel(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("cancel hangs")
		}
		for v := range ch {
			if v.N <= prev {
				t.Fatalf("out of order: %d after %d", v.N, prev)
			}
			prev = v.N
		}
		b.Shutdown(context.Background())
	}
}

// Many publishers (Append, to know each value's offset), a small Count and an
// Age (ring growth and trimming), followers that Read with varying buffers
// while others Seek them: every record's value is the one published at its
// offset, offsets increase between seeks, and what is skipped is what is told.
func TestFollowEdgeFollowersValuesMatchOffsetsUnderSeeksAndTrims(t *testing.T) {
	for _, ret := range []topic.Retention{{Count: 3}, {Count: 13}, {Count: 64}, {Count: 1000, Age: 200 * time.Microsecond}, {Count: 7, NoTime: true}} {
		t.Run(fmt.Sprintf("%d/%v/%v", ret.Count, ret.Age, ret.NoTime), func(t *testing.T) {
			const pubs, per = 4, 3000
			var b topic.Broker
			b.Retain[feVal](ret)
			var published sync.Map // offset -> value
			var wg sync.WaitGroup
			type out struct {
				recs    []topic.Record[feVal]
				skipped uint64
				losses  uint64
			}
			const nf = 4
			outs := make([]*out, nf)
			stop := make(chan struct{})
			var seekers sync.WaitGroup
			for i := range nf {
				o := &out{}
				outs[i] = o
				var lossN atomic.Uint64
				f := b.Follow(topic.Replay[feVal](topic.Earliest()), topic.OnLoss(func(l topic.Loss[feVal]) {
					lossN.Add(l.Count)
				}))
				if i%2 == 1 {
					seekers.Go(func() {
						for k := 0; ; k++ {
							select {
							case <-stop:
								return
							default:
							}
							tail := uint64(0)
							if _, next, _ := b.Read[feVal](1<<62, 1); next > 0 {
								tail = next
							}
							_ = tail
							f.Seek(uint64(k * 37 % (pubs * per)))
							time.Sleep(50 * time.Microsecond)
						}
					})
				}
				wg.Go(func() {
					defer f.Close()
					buf := make([]topic.Record[feVal], 1+i*5)
					for {
						n := f.Read(buf)
						for _, r := range buf[:n] {
							o.skipped += r.Skipped
						}
						o.recs = append(o.recs, buf[:n]...)
						if n == 0 {
							select {
							case <-stop:
								if i%2 == 0 && f.Offset() >= pubs*per {
									o.losses = lossN.Load()
									return
								}
								if i%2 == 1 {
									return
								}
							default:
							}
							ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
							f.Wait(ctx)
							cancel()
						}
					}
				})
			}
			var pw sync.WaitGroup
			for p := range pubs {
				pw.Go(func() {
					for n := range per {
						v := feVal{p, n}
						off, ok := b.Append(v)
						if !ok {
							t.Error("Append not ok")
							return
						}
						if _, dup := published.LoadOrStore(off, v); dup {
							t.Errorf("offset %d given twice", off)
						}
					}
				})
			}
			pw.Wait()
			close(stop)
			seekers.Wait()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("followers hang")
			}
			for i, o := range outs {
				for _, r := range o.recs {
					v, ok := published.Load(r.Offset)
					if !ok || v.(feVal) != r.Value {
						t.Errorf("f%d: offset %d holds %v, published %v", i, r.Offset, r.Value, v)
						break
					}
					if !ret.NoTime && r.Time.IsZero() {
						t.Errorf("f%d: zero time", i)
						break
					}
				}
				if i%2 == 0 {
					prev := int64(-1)
					for _, r := range o.recs {
						if gap := int64(r.Offset) - prev - 1; gap != int64(r.Skipped) {
							t.Errorf("f%d: offset %d after %d, told %d skipped", i, r.Offset, prev, r.Skipped)
							break
						}
						prev = int64(r.Offset)
					}
					if uint64(len(o.recs))+o.skipped != pubs*per && ret.Age == 0 {
						t.Errorf("f%d: read %d + skipped %d != %d", i, len(o.recs), o.skipped, pubs*per)
					}
					if o.losses < o.skipped {
						t.Errorf("f%d: OnLoss counted %d, records told %d", i, o.losses, o.skipped)
					}
				}
			}
			b.Shutdown(context.Background())
		})
	}
}

// A handler follower with Retry keeps the order and loses nothing, and
// Shutdown drains it to the end of the log.
func TestFollowEdgeHandlerFollowerRetryOrderAndDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 1000})
		var got []int
		tries := map[int]int{}
		b.Handle(func(_ context.Context, v fOrder) error {
			tries[v.N]++
			if v.N%3 == 0 && tries[v.N] < 3 {
				return errors.New("again")
			}
			got = append(got, v.N)
			return nil
		}, topic.Follow[fOrder](), topic.Retry[fOrder](topic.RetryPolicy{Attempts: 5, Base: time.Second}))
		var pw sync.WaitGroup
		for p := range 3 {
			pw.Go(func() {
				for n := range 50 {
					b.Publish(fOrder{p*50 + n})
				}
			})
		}
		pw.Wait()
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(got) != 150 {
			t.Errorf("handled %d of 150 before Shutdown returned", len(got))
		}
		recs, _, _ := b.Read[fOrder](0, 1000)
		_ = recs
		seen := map[int]bool{}
		for _, n := range got {
			if seen[n] {
				t.Errorf("%d handled twice", n)
			}
			seen[n] = true
		}
	})
}

// Commit rules.
func TestFollowEdgeCommitRules(t *testing.T) {
	var b topic.Broker
	b.Retain[fOrder](topic.Retention{Count: 100})
	for n := range 10 {
		b.Publish(fOrder{n})
	}
	f := b.Follow(topic.Name[fOrder]("c"), topic.Replay[fOrder](topic.At(5)))
	if _, p := panicMessage(func() { f.Commit(5) }); !p {
		t.Error("commit of an unread offset did not panic")
	}
	buf := make([]topic.Record[fOrder], 2)
	f.Read(buf) // 5, 6
	if _, p := panicMessage(func() { f.Commit(7) }); !p {
		t.Error("commit of 7 did not panic")
	}
	if _, p := panicMessage(func() { f.Commit(2) }); !p {
		t.Log("commit of 2, never read (below the start), did not panic")
	}
	f.Commit(6)
	f.Commit(5)
	if c, ok := f.Committed(); c != 6 || !ok {
		t.Errorf("committed %d %v", c, ok)
	}
	f.Close()
	g := b.Follow(topic.Name[fOrder]("c"), topic.Replay[fOrder](topic.Earliest()))
	defer g.Close()
	if got := fOffsets(fReadAll(g, 3)); !slices.Equal(got, fSeq(7, 10)) {
		t.Errorf("resumed at %v", got)
	}
	if !b.Seek[fOrder]("c", 2) {
		t.Error("Seek by name found none")
	}
	if got := fOffsets(fReadAll(g, 3)); !slices.Equal(got, fSeq(2, 10)) {
		t.Errorf("after Seek(2): %v", got)
	}
	if _, p := panicMessage(func() { b.Follow(topic.Name[fOrder]("c")) }); !p {
		t.Error("a second live name did not panic")
	}
	if n := len(b.Subscriptions()); n != 1 {
		t.Errorf("%d subscriptions", n)
	}
}

// A keyed log's follower with concurrent publishers: each record read is
// the value published at its offset, and the final state a follower ends
// with is the current state.
func TestFollowEdgeKeyedConcurrent(t *testing.T) {
	var b topic.Broker
	b.RetainLatest(feK, topic.Retention{Count: 8})
	var published sync.Map
	f := b.Follow(topic.Replay[feKey](topic.Earliest()))
	state := map[string]topic.Record[feKey]{}
	var readRecs []topic.Record[feKey]
	done := make(chan struct{})
	var readErr error
	go func() {
		defer close(done)
		buf := make([]topic.Record[feKey], 3)
		prev := int64(-1)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			err := f.Wait(ctx)
			cancel()
			if err != nil {
				return
			}
			n := f.Read(buf)
			for _, r := range buf[:n] {
				if int64(r.Offset) <= prev {
					readErr = fmt.Errorf("offset %d after %d", r.Offset, prev)
				}
				prev = int64(r.Offset)
				readRecs = append(readRecs, r)
				state[r.Value.K] = r
			}
		}
	}()
	var pw sync.WaitGroup
	for p := range 4 {
		pw.Go(func() {
			for n := range 3000 {
				v := feKey{fmt.Sprint("k", (n*7+p)%6), p*10000 + n}
				off, _ := b.Append(v)
				published.Store(off, v)
			}
		})
	}
	pw.Wait()
	<-done
	if readErr != nil {
		t.Error(readErr)
	}
	for _, r := range readRecs {
		v, _ := published.Load(r.Offset)
		if v == nil || v.(feKey) != r.Value {
			t.Errorf("offset %d holds %v, published %v", r.Offset, r.Value, v)
			break
		}
	}
	recs, _, _ := b.Read[feKey](0, 100)
	if len(recs) != 6 {
		t.Errorf("%d keys kept, want 6", len(recs))
	}
	for _, r := range recs {
		if state[r.Value.K] != r {
			t.Errorf("follower ended with %v for %s, log has %v", state[r.Value.K], r.Value.K, r)
		}
	}
	f.Close()
}

// Subscribe with Follow and a context already done returns a cancelled
// subscription, its channel closed (Context's promise), at once.
func TestFollowEdgeChannelFollowerWithDoneContextIsClosedAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	open := 0
	for range 200 {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 4})
		ch, _ := b.Subscribe(topic.Follow[fOrder](), topic.Context[fOrder](ctx))
		select {
		case _, ok := <-ch:
			if ok {
				t.Fatal("a value on a cancelled subscription")
			}
		default:
			open++
		}
	}
	if open > 0 {
		t.Errorf("the channel was still open when Subscribe returned in %d of 200", open)
	}
}

// After Shutdown returns, Subscriptions gives the final counts: the value a
// channel follower's pump held when Shutdown closed it is counted Closed by
// then, and its channel is closed.
func TestFollowEdgeChannelFollowerFinalCountsWhenShutdownReturns(t *testing.T) {
	notYet, openAfter := 0, 0
	for range 200 {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 4})
		ch, _ := b.Subscribe(topic.Follow[fOrder](), topic.Buffer[fOrder](0))
		b.Publish(fOrder{1})
		// let the pump take it and block in its send
		deadline := time.Now().Add(10 * time.Second)
		for b.Subscriptions()[0].Follower.Offset != 1 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Microsecond)
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		before := b.Subscriptions()[0].Lost
		select {
		case _, ok := <-ch:
			if ok {
				continue // taken: fine
			}
		default:
			openAfter++
		}
		time.Sleep(time.Millisecond)
		after := b.Subscriptions()[0].Lost
		if before != after {
			notYet++
		}
	}
	if notYet > 0 || openAfter > 0 {
		t.Errorf("after Shutdown returned: counts changed later in %d of 200, channel not closed in %d of 200", notYet, openAfter)
	}
}

// Without Buffer, a channel follower's capacity is one.
func TestFollowEdgeChannelFollowerDefaultCapacity(t *testing.T) {
	var b topic.Broker
	b.Retain[fOrder](topic.Retention{Count: 4})
	ch, cancel := b.Subscribe(topic.Follow[fOrder]())
	defer cancel()
	if cap(ch) != 1 {
		t.Errorf("capacity %d, want 1", cap(ch))
	}
}

// A durable handler follower stopped during a retry's back-off finishes
// the value, commits it, and one restarted under its name carries on with
// the next: every value handled once, in order.
func TestFollowEdgeHandlerFollowerStopDuringBackoffThenResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 100})
		var got []int
		failed := false
		f := func(_ context.Context, v fOrder) error {
			if v.N == 2 && !failed {
				failed = true
				return errors.New("once")
			}
			got = append(got, v.N)
			return nil
		}
		opts := []topic.Option[fOrder]{topic.Follow[fOrder](), topic.Name[fOrder]("h"), topic.Replay[fOrder](topic.Earliest()),
			topic.Retry[fOrder](topic.RetryPolicy{Attempts: 3, Base: time.Minute})}
		for n := range 6 {
			b.Publish(fOrder{n})
		}
		stop := b.Handle(f, opts...)
		synctest.Wait() // in back-off on 2
		stop()
		if !slices.Equal(got, []int{0, 1, 2}) {
			t.Errorf("before stop returned: %v, want 0 1 2", got)
		}
		stop = b.Handle(f, opts...)
		synctest.Wait()
		stop()
		if !slices.Equal(got, []int{0, 1, 2, 3, 4, 5}) {
			t.Errorf("after resume: %v", got)
		}
		// DiscardOnStop: stop during back-off discards the value in hand,
		// counts it, commits it.
		failed = false
		got = nil
		b.Publish(fOrder{2}) // offset 6
		b.Publish(fOrder{7})
		var lost []topic.Loss[fOrder]
		stop = b.Handle(f, append(opts, topic.DiscardOnStop[fOrder](), topic.OnLoss(func(l topic.Loss[fOrder]) { lost = append(lost, l) }))...)
		synctest.Wait()
		stop()
		if len(lost) != 1 || lost[0].Cause != topic.Discarded || lost[0].Value.N != 2 {
			t.Errorf("DiscardOnStop in back-off: lost %+v", lost)
		}
		stop = b.Handle(f, opts...)
		synctest.Wait()
		stop()
		if !slices.Equal(got, []int{7}) {
			t.Errorf("after the discard: %v, want 7", got)
		}
	})
}

// Dead letters of a follower handler: published, the value committed.
func TestFollowEdgeHandlerFollowerDeadLetters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 100})
		dl, cancel := b.Subscribe(topic.Buffer[topic.DeadLetter[fOrder]](10))
		defer cancel()
		stop := b.Handle(func(_ context.Context, v fOrder) error {
			if v.N%2 == 1 {
				return topic.Permanent(errors.New("no"))
			}
			return nil
		}, topic.Follow[fOrder](), topic.Name[fOrder]("h"), topic.Retry[fOrder](topic.RetryPolicy{Attempts: 3}))
		for n := range 5 {
			b.Publish(fOrder{n})
		}
		synctest.Wait()
		st := b.Subscriptions()
		var hs topic.SubscriptionStats
		for _, s := range st {
			if s.Name == "h" {
				hs = s
			}
		}
		if hs.Follower == nil || hs.Follower.Committed != 5 || hs.Handler.DeadLettered != 2 {
			t.Errorf("stats %+v %+v", hs.Follower, hs.Handler)
		}
		if got := takeAll(dl); len(got) != 2 || got[0].Value.N != 1 || got[1].Value.N != 3 || got[0].Handler != "h" {
			t.Errorf("dead letters %+v", got)
		}
		stop()
	})
}

// A model of a compacted log: random keys, a key bound and an age; Read,
// a replay and a fresh follower from the earliest all give the model's
// state.
func TestFollowEdgeKeyedModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for seed := range 20 {
			var b topic.Broker
			count := 1 + seed%5
			age := time.Duration(0)
			if seed%2 == 1 {
				age = 10 * time.Second
			}
			b.RetainLatest(feK, topic.Retention{Count: count, Age: age})
			type item struct {
				off uint64
				at  time.Time
				v   feKey
			}
			var model []item // in offset order, one per key
			off := uint64(0)
			x := uint64(seed*7919 + 1)
			rnd := func(n int) int { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return int(x % uint64(n)) }
			for step := range 400 {
				if rnd(10) == 0 {
					time.Sleep(time.Duration(rnd(4)) * time.Second)
				}
				v := feKey{fmt.Sprint("k", rnd(8)), step}
				b.Publish(v)
				now := time.Now()
				model = slices.DeleteFunc(model, func(it item) bool { return it.v.K == v.K })
				model = append(model, item{off, now, v})
				off++
				if len(model) > count {
					model = model[len(model)-count:]
				}
				if age > 0 {
					model = slices.DeleteFunc(model, func(it item) bool { return now.Sub(it.at) > age })
				}
				if step%37 != 0 {
					continue
				}
				now = time.Now()
				var want []string
				for _, it := range model {
					if age == 0 || now.Sub(it.at) <= age {
						want = append(want, fmt.Sprintf("%s=%d@%d", it.v.K, it.v.V, it.off))
					}
				}
				recs, _, _ := b.Read[feKey](0, 100)
				if got := feShowKeyed(recs); !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d Read: %v, want %v", seed, step, got, want)
				}
				rep, cancel := b.Subscribe(topic.Buffer[topic.Record[feKey]](100), topic.Replay[topic.Record[feKey]](topic.Earliest()))
				if got := feShowKeyed(takeAll(rep)); !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d Replay: %v, want %v", seed, step, got, want)
				}
				cancel()
			}
			b.Shutdown(context.Background())
		}
	})
}

// Ring sizes around the growth points, read by Read and a follower while
// publishing, single publisher: every value at its offset, nothing kept is
// missed.
func TestFollowEdgeRingGrowthBoundaries(t *testing.T) {
	for _, count := range []int{1, 2, 7, 8, 9, 15, 16, 17, 24, 100} {
		var b topic.Broker
		b.Retain[feVal](topic.Retention{Count: count})
		f := b.Follow(topic.Replay[feVal](topic.Earliest()))
		buf := make([]topic.Record[feVal], 3)
		var read []topic.Record[feVal]
		for n := range 200 {
			b.Publish(feVal{0, n})
			if n%5 == 0 {
				k := f.Read(buf)
				read = append(read, buf[:k]...)
			}
			recs, next, skipped := b.Read[feVal](0, 1000)
			if next != uint64(n+1) || len(recs) != min(count, n+1) || skipped != uint64(n+1-len(recs)) {
				t.Fatalf("count %d after %d: %d recs next %d skipped %d", count, n, len(recs), next, skipped)
			}
			for _, r := range recs {
				if uint64(r.Value.N) != r.Offset {
					t.Fatalf("count %d: offset %d holds %d", count, r.Offset, r.Value.N)
				}
			}
		}
		for k := f.Read(buf); k > 0; k = f.Read(buf) {
			read = append(read, buf[:k]...)
		}
		prev := int64(-1)
		var sk uint64
		for _, r := range read {
			if uint64(r.Value.N) != r.Offset || int64(r.Offset)-prev-1 != int64(r.Skipped) {
				t.Fatalf("count %d: follower read %d@%d after %d skipped %d", count, r.Value.N, r.Offset, prev, r.Skipped)
			}
			sk += r.Skipped
			prev = int64(r.Offset)
		}
		if st := b.Subscriptions()[0]; st.Lost.Skipped != sk || prev != 199 {
			t.Errorf("count %d: Lost.Skipped %d, told %d, last %d", count, st.Lost.Skipped, sk, prev)
		}
		f.Close()
	}
}
