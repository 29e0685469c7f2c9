package topic_test

import (
	"fmt"
	"sync"
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
