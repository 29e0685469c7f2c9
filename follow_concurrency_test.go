package topic_test

// Tests of followers under concurrent publishers, Seeks, Commits, name
// churn, trims and ring growth: every record read carries the value
// published at its offset, offsets increase between seeks, and what is
// skipped is what is told.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic"
)

type fPub struct {
	P, N int
}

// Many publishers (Append, to know each value's offset), a small Count and an
// Age (ring growth and trimming), followers that Read with varying buffers
// while others Seek them: every record's value is the one published at its
// offset, offsets increase between seeks, and what is skipped is what is told.
func TestFollowersValuesMatchOffsetsUnderSeeksAndTrims(t *testing.T) {
	for _, ret := range []topic.Retention{{Count: 3}, {Count: 13}, {Count: 64}, {Count: 1000, Age: 200 * time.Microsecond}, {Count: 7, NoTime: true}} {
		t.Run(fmt.Sprintf("%d/%v/%v", ret.Count, ret.Age, ret.NoTime), func(t *testing.T) {
			const pubs, per = 4, 3000
			var b topic.Broker
			b.Retain[fPub](ret)
			var published sync.Map // offset -> value
			var wg sync.WaitGroup
			type out struct {
				recs    []topic.Record[fPub]
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
				f := b.Follow(topic.Replay[fPub](topic.Earliest()), topic.OnLoss(func(l topic.Loss[fPub]) {
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
							if _, next, _ := b.Read[fPub](1<<62, 1); next > 0 {
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
					buf := make([]topic.Record[fPub], 1+i*5)
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
						v := fPub{p, n}
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
					if !ok || v.(fPub) != r.Value {
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

// Ring sizes around the growth points, read by Read and a follower while
// publishing, single publisher: every value at its offset, nothing kept is
// missed.
func TestFollowAcrossRingGrowthBoundariesMissesNothing(t *testing.T) {
	for _, count := range []int{1, 2, 7, 8, 9, 15, 16, 17, 24, 100} {
		var b topic.Broker
		b.Retain[fPub](topic.Retention{Count: count})
		f := b.Follow(topic.Replay[fPub](topic.Earliest()))
		buf := make([]topic.Record[fPub], 3)
		var read []topic.Record[fPub]
		for n := range 200 {
			b.Publish(fPub{0, n})
			if n%5 == 0 {
				k := f.Read(buf)
				read = append(read, buf[:k]...)
			}
			recs, next, skipped := b.Read[fPub](0, 1000)
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

// Concurrent publishers, readers, Seeks (own and by name), Commits and
// name churn: every record read carries the value published at its offset,
// offsets increase between seeks, and nothing panics.
func TestFollowConcurrentFollowerChurnReadsWhatWasPublished(t *testing.T) {
	var b topic.Broker
	b.Retain[fVal](topic.Retention{Count: 32})
	const pubs, per = 3, 3000
	var wg sync.WaitGroup
	var stopFlag atomic.Bool
	for p := range pubs {
		wg.Go(func() {
			for i := range per {
				b.Publish(fVal{p*per + i})
			}
		})
	}
	// values are unique; check each record against Read of the same offset
	errs := make(chan string, 100)
	for r := range 3 {
		wg.Go(func() {
			name := fmt.Sprintf("r%d", r)
			for round := 0; !stopFlag.Load() && round < 50; round++ {
				f := b.Follow(topic.Name[fVal](name), topic.Replay[fVal](topic.Earliest()),
					topic.AckWait[fVal](time.Millisecond))
				buf := make([]topic.Record[fVal], 8)
				for k := 0; k < 40; k++ {
					n := f.Read(buf)
					for i := range n {
						got, _, _ := b.Read[fVal](buf[i].Offset, 1)
						if len(got) == 1 && got[0].Offset == buf[i].Offset && got[0].Value != buf[i].Value {
							select {
							case errs <- fmt.Sprintf("offset %d: read %v, log has %v", buf[i].Offset, buf[i].Value, got[0].Value):
							default:
							}
						}
						if i > 0 && buf[i].Offset <= buf[i-1].Offset {
							select {
							case errs <- fmt.Sprintf("offsets not increasing in one read: %v", recordOffsets(buf[:n])):
							default:
							}
						}
					}
					if n > 0 && k%3 == 0 {
						f.Commit(buf[n-1].Offset)
					}
					if k%7 == 0 {
						f.Seek(f.Offset() / 2)
					}
				}
				f.Close()
			}
		})
		wg.Go(func() {
			name := fmt.Sprintf("r%d", r)
			for !stopFlag.Load() {
				b.Seek[fVal](name, 0)
				b.Subscriptions()
				time.Sleep(10 * time.Microsecond)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	time.Sleep(200 * time.Millisecond)
	stopFlag.Store(true)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("hang")
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := len(b.Subscriptions()); n != 0 {
		t.Errorf("%d subscriptions left", n)
	}
}
