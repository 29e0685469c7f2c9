package topic_test

// Tests of AckWait on followers of keyed logs (RetainLatest), whose kept
// offsets have gaps (the values replaced since): against a model of one
// durable follower (keyedAckModel); Seeks and Commits racing re-reads; Wait
// during a re-read that a commit passed over; Close when a re-read falls
// due; handler and channel followers with AckWait; the runs a reader that
// never commits keeps.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

type ackKv struct{ K, V int }

func ackKvKey(v ackKv) int { return v.K }

// Wait "returns once a record can be read". A re-read has read 0 and 1 of
// 0..4; a Commit of 4 then covers all the rest of it: the re-read passes
// over 2..4 ("values committed while a re-read runs are passed over"), so
// nothing can be read until a value is published. Wait must wait.
func TestFollowWaitDuringACommittedReReadWaits(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				if keyed {
					b.RetainLatest(ackKvKey, topic.Retention{Count: 16})
				} else {
					b.Retain[ackKv](topic.Retention{Count: 16})
				}
				f := b.Follow(topic.Name[ackKv]("w"), topic.AckWait[ackKv](10*time.Millisecond))
				defer f.Close()
				for i := range 5 {
					b.Publish(ackKv{i, i})
				}
				buf := make([]topic.Record[ackKv], 16)
				if n := f.Read(buf); n != 5 {
					t.Fatalf("Read read %d, want 5", n)
				}
				time.Sleep(11 * time.Millisecond)
				if n := f.Read(buf[:2]); n != 2 || buf[0].Offset != 0 {
					t.Fatalf("re-read: %d from %d, want 0 and 1", n, buf[0].Offset)
				}
				f.Commit(4)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
				defer cancel()
				at := f.Offset()
				err := f.Wait(ctx)
				n := f.Read(buf)
				if err == nil && n == 0 {
					t.Errorf("Wait returned nil at offset %d (tail 5, all committed), yet Read then read nothing: no record could be read (want ctx's deadline)", at)
				} else if n != 0 {
					t.Errorf("Read after Commit(4) read %d from %d: committed values re-read", n, buf[0].Offset)
				}
			})
		})
	}
}

// keyedAckModel is a model of one durable follower with AckWait of a keyed log
// (RetainLatest, no age bound), from the documentation of RetainLatest,
// Follow, AckWait, Read, Seek and Commit: the log keeps the latest value of
// each key, at most count keys (a new key beyond drops the key whose latest
// value is oldest); a read reads the values kept from the position on, and
// skips nothing. Time moves in steps of 0 or more than AckWait/64, so that
// runs of reads are made at one instant (see readMark).
// A modelRead is a read the model's follower has not committed: the
// offsets [first, end) and the time it was read at.
type modelRead struct {
	first, end uint64
	at         time.Duration
}

type keyedAckModel struct {
	count  int
	vals   []ackKv
	latest map[int]uint64 // key -> offset of its value kept
	kept   map[uint64]bool
	now    time.Duration
	wait   time.Duration
	// the follower
	pos, committed, delivered uint64
	unacked                   []modelRead
	replayTo                  uint64
	name                      uint64 // committed under the name, plus one
}

func (m *keyedAckModel) tail() uint64 { return uint64(len(m.vals)) }

func (m *keyedAckModel) publish(v ackKv) {
	o := m.tail()
	m.vals = append(m.vals, v)
	if old, ok := m.latest[v.K]; ok {
		delete(m.kept, old)
	}
	m.latest[v.K] = o
	m.kept[o] = true
	for len(m.kept) > m.count {
		oldest := m.keptFrom(0)[0]
		delete(m.kept, oldest)
		delete(m.latest, m.vals[oldest].K)
	}
}

func (m *keyedAckModel) keptFrom(o uint64) []uint64 {
	var os []uint64
	for k := range m.kept {
		if k >= o {
			os = append(os, k)
		}
	}
	sort.Slice(os, func(i, j int) bool { return os[i] < os[j] })
	return os
}

func (m *keyedAckModel) due() bool {
	return len(m.unacked) > 0 && m.now-m.unacked[0].at > m.wait
}

func (m *keyedAckModel) read(n int) []topic.Record[ackKv] {
	if m.due() {
		m.replayTo = max(m.replayTo, m.pos)
		m.pos = min(m.pos, m.unacked[0].first)
		m.unacked = nil
	}
	if m.pos < m.replayTo {
		m.pos = min(max(m.pos, m.committed), m.replayTo)
	}
	os := m.keptFrom(m.pos)
	if len(os) == 0 {
		m.pos = max(m.pos, m.tail())
		return nil
	}
	var recs []topic.Record[ackKv]
	for _, o := range os[:min(n, len(os))] {
		recs = append(recs, topic.Record[ackKv]{Offset: o, Value: m.vals[o]})
	}
	end := m.tail()
	if len(recs) < len(os) {
		end = recs[len(recs)-1].Offset + 1
	}
	m.pos = end
	m.delivered = max(m.delivered, end)
	if first := max(recs[0].Offset, m.committed); first < end {
		if k := len(m.unacked); k > 0 && m.unacked[k-1].end == first && m.unacked[k-1].at == m.now {
			m.unacked[k-1].end = end
		} else {
			m.unacked = append(m.unacked, modelRead{first, end, m.now})
		}
	}
	return recs
}

// readable reports whether a read now would return a record.
func (m *keyedAckModel) readable() bool {
	c := *m
	c.unacked = slices.Clone(m.unacked)
	return len(c.read(1)) > 0
}

// next is where the next read starts, unless a re-read is due: past what
// is committed while a re-read runs.
func (m *keyedAckModel) next() uint64 {
	if m.pos < m.replayTo {
		return min(max(m.pos, m.committed), m.replayTo)
	}
	return m.pos
}

func (m *keyedAckModel) seek(o uint64) {
	m.pos, m.unacked, m.replayTo = o, nil, 0
}

func (m *keyedAckModel) commit(o uint64) bool {
	if o >= m.delivered {
		return false
	}
	m.committed = max(m.committed, o+1)
	m.name = max(m.name, o+1)
	for len(m.unacked) > 0 && m.unacked[0].end <= m.committed {
		m.unacked = m.unacked[1:]
	}
	if len(m.unacked) > 0 {
		m.unacked[0].first = max(m.unacked[0].first, m.committed)
	}
	return true
}

func (m *keyedAckModel) reopen() {
	m.pos, m.committed, m.delivered = 0, 0, 0
	if m.name > 0 {
		m.pos, m.committed, m.delivered = m.name, m.name, m.name
	}
	m.unacked, m.replayTo = nil, 0
}

func showAckKv(recs []topic.Record[ackKv]) string {
	var s []string
	for _, r := range recs {
		s = append(s, fmt.Sprintf("%d:%d=%d/s%d", r.Offset, r.Value.K, r.Value.V, r.Skipped))
	}
	return "[" + strings.Join(s, " ") + "]"
}

func TestFollowKeyedAckWaitMatchesTheModel(t *testing.T) {
	const seeds = 300
	rereads, waitsNil := 0, 0
	for seed := range seeds {
		var failed bool
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 4))
			const wait = 64 * time.Millisecond
			count := 2 + rng.IntN(6)
			keys := 1 + rng.IntN(10)
			var b topic.Broker
			b.RetainLatest(ackKvKey, topic.Retention{Count: count})
			m := &keyedAckModel{count: count, latest: map[int]uint64{}, kept: map[uint64]bool{}, wait: wait}
			open := func() *topic.Follower[ackKv] {
				return b.Follow(topic.Name[ackKv]("k"), topic.Replay[ackKv](topic.Earliest()), topic.AckWait[ackKv](wait))
			}
			f := open()
			var log []string
			fail := func(format string, args ...any) {
				if !failed {
					t.Errorf("seed %d (count %d, keys %d): %s\nafter:\n  %s", seed, count, keys,
						fmt.Sprintf(format, args...), strings.Join(log[max(0, len(log)-40):], "\n  "))
				}
				failed = true
			}
			for step := 0; step < 300 && !failed; step++ {
				switch op := rng.IntN(12); {
				case op < 3:
					v := ackKv{rng.IntN(keys), int(m.tail())}
					b.Publish(v)
					m.publish(v)
					log = append(log, fmt.Sprintf("Publish(%d=%d)", v.K, v.V))
				case op < 6:
					n := 1 + rng.IntN(4)
					buf := make([]topic.Record[ackKv], n)
					k := f.Read(buf)
					got := buf[:k]
					for i := range got {
						got[i].Time = time.Time{}
					}
					if m.due() {
						rereads++
					}
					want := m.read(n)
					log = append(log, fmt.Sprintf("Read(%d) = %s", n, showAckKv(got)))
					if !slices.EqualFunc(got, want, func(x, y topic.Record[ackKv]) bool {
						return x.Offset == y.Offset && x.Value == y.Value && x.Skipped == y.Skipped
					}) {
						fail("Read(%d) = %s, want %s", n, showAckKv(got), showAckKv(want))
					}
				case op == 6:
					o := uint64(rng.IntN(int(m.tail()) + 3))
					f.Seek(o)
					m.seek(o)
					log = append(log, fmt.Sprintf("Seek(%d)", o))
				case op == 7 || op == 8:
					o := uint64(rng.IntN(int(m.tail()) + 2))
					msg, panicked := panicMessage(func() { f.Commit(o) })
					ok := m.commit(o)
					log = append(log, fmt.Sprintf("Commit(%d) panicked %v", o, panicked))
					if ok == panicked {
						fail("Commit(%d) panicked %v (%q), the model says %v", o, panicked, msg, !ok)
					}
				case op == 9:
					d := []time.Duration{0, 30 * time.Millisecond, 100 * time.Millisecond}[rng.IntN(3)]
					time.Sleep(d)
					m.now += d
					log = append(log, fmt.Sprintf("Sleep(%v)", d))
				case op == 10:
					ctx, cancel := context.WithCancel(context.Background())
					cancel()
					err := f.Wait(ctx)
					want := m.due() || m.readable()
					if err == nil {
						waitsNil++
					}
					log = append(log, fmt.Sprintf("Wait = %v", err))
					if got := err == nil; got != want {
						fail("Wait = %v, the model says ready %v", err, want)
					}
				case op == 11:
					f.Close()
					f = open()
					m.reopen()
					log = append(log, "Close; Follow")
				}
				if got, want := f.Offset(), m.next(); got != want {
					fail("Offset() = %d, want %d", got, want)
				}
				c, ok := f.Committed()
				if ok != (m.committed > 0) || ok && c != m.committed-1 {
					fail("Committed() = %d, %v, want %d", c, ok, int64(m.committed)-1)
				}
			}
			f.Close()
		})
		if failed {
			break
		}
	}
	t.Logf("%d re-reads, %d Waits returned nil", rereads, waitsNil)
}

// runTrials runs trial until d has passed, at least min times.
func runTrials(d time.Duration, least int, trial func(i int)) int {
	deadline := time.Now().Add(d)
	i := 0
	for ; i < least || time.Now().Before(deadline); i++ {
		trial(i)
	}
	return i
}

// A Seek racing a re-read of a keyed log: to the offset the read started
// from (8, the ABA of its compare-and-swap), or elsewhere. Whichever goes
// first, the follower ends where the Seek put it, or past what a read from
// there read.
func TestFollowKeyedSeekRacingAReReadIsNotLost(t *testing.T) {
	for _, to := range []uint64{8, 5, 2, 0} {
		t.Run(fmt.Sprint("to=", to), func(t *testing.T) {
			logged := false
			lost, n := raceAReRead(t, keyedOf8(), 200, 250*time.Millisecond, func(f *topic.Follower[ackKv]) { f.Seek(to) },
				func(f *topic.Follower[ackKv], read []topic.Record[ackKv]) bool {
					k, o := uint64(len(read)), f.Offset()
					seekFirst := k > 0 && read[0].Offset == to && o == min(to+k, 8) ||
						k == 0 && to == 8 && o == 8
					readFirst := o == to
					if !seekFirst && !readFirst && k > 0 && !logged {
						logged = true
						t.Logf("read %d from %d, then at %d: the Seek to %d is lost", k, read[0].Offset, o, to)
					}
					return seekFirst || readFirst
				})
			if lost > 0 {
				t.Errorf("%d of %d trials lost the Seek", lost, n)
			}
		})
	}
}

// A Commit racing a re-read of a keyed log: once both are done, nothing
// committed is read again.
func TestFollowKeyedCommitRacingAReReadIsHonoured(t *testing.T) {
	buf := make([]topic.Record[ackKv], 16)
	bad, n := raceAReRead(t, keyedOf8(), 200, 400*time.Millisecond, func(f *topic.Follower[ackKv]) { f.Commit(7) },
		func(f *topic.Follower[ackKv], _ []topic.Record[ackKv]) bool {
			ok := true
			if k := f.Read(buf[:4]); k > 0 && buf[0].Offset == 0 {
				ok = false
			}
			// Everything is committed: the reads that follow, however
			// late, read nothing.
			time.Sleep(time.Microsecond)
			for range 3 {
				if k := f.Read(buf); k > 0 && buf[0].Offset < 4 {
					ok = false
				}
			}
			return ok
		})
	if bad > 0 {
		t.Errorf("%d of %d trials read committed values again", bad, n)
	}
}

// keyedOf8 returns a broker that keeps the latest ackKv of each key and
// holds 8 of them, at offsets 0 to 7.
func keyedOf8() *topic.Broker {
	b := new(topic.Broker)
	b.RetainLatest(ackKvKey, topic.Retention{Count: 64})
	for i := range 8 {
		b.Publish(ackKv{i, i})
	}
	return b
}

// A reader in Next (AckWait, never committing) on a keyed log while another
// goroutine Seeks and Commits and publishers replace keys; then Close. Each
// record read is the value kept at its offset, Next ends with ErrClosed.
func TestFollowKeyedAckWaitStress(t *testing.T) {
	var b topic.Broker
	b.RetainLatest(ackKvKey, topic.Retention{Count: 6})
	f := b.Follow(topic.Name[ackKv]("s"), topic.AckWait[ackKv](200*time.Microsecond),
		topic.Replay[ackKv](topic.Earliest()))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var read atomic.Uint64
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b.Publish(ackKv{i % 9, i})
			if i%8 == 0 {
				time.Sleep(50 * time.Microsecond)
			}
		}
	})
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
			switch rng.IntN(3) {
			case 0:
				f.Seek(f.Offset() - min(f.Offset(), uint64(rng.IntN(6))))
			case 1:
				if o := read.Load(); o > 0 {
					f.Commit(o - 1)
				}
			}
		}
	})
	errc := make(chan error, 1)
	bad := make(chan string, 1)
	go func() {
		for {
			r, err := f.Next(context.Background())
			if err != nil {
				errc <- err
				return
			}
			if uint64(r.Value.V) != r.Offset {
				select {
				case bad <- fmt.Sprintf("record %+v: value of another offset", r):
				default:
				}
			}
			for {
				o := read.Load()
				if r.Offset+1 <= o || read.CompareAndSwap(o, r.Offset+1) {
					break
				}
			}
		}
	}()
	time.Sleep(400 * time.Millisecond)
	close(stop)
	wg.Wait()
	f.Close()
	select {
	case err := <-errc:
		if err != topic.ErrClosed {
			t.Errorf("Next: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not return after Close")
	}
	select {
	case s := <-bad:
		t.Error(s)
	default:
	}
}

// Close at the very instant a re-read falls due, while Next waits for it:
// Next returns (the re-read, or ErrClosed), and nothing is left running.
func TestFollowCloseWhenAReReadFallsDueEndsNext(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		for _, d := range []time.Duration{9 * time.Millisecond, 10 * time.Millisecond, 10*time.Millisecond + 1, 11 * time.Millisecond} {
			t.Run(fmt.Sprintf("keyed=%v/d=%v", keyed, d), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var b topic.Broker
					if keyed {
						b.RetainLatest(ackKvKey, topic.Retention{Count: 8})
					} else {
						b.Retain[ackKv](topic.Retention{Count: 8})
					}
					f := b.Follow(topic.Name[ackKv]("c"), topic.AckWait[ackKv](10*time.Millisecond))
					b.Publish(ackKv{1, 1})
					if r, err := f.Next(context.Background()); err != nil || r.Offset != 0 {
						t.Fatalf("Next: %+v, %v", r, err)
					}
					type res struct {
						r   topic.Record[ackKv]
						err error
					}
					resc := make(chan res, 4)
					go func() {
						for {
							r, err := f.Next(context.Background())
							resc <- res{r, err}
							if err != nil {
								return
							}
						}
					}()
					time.Sleep(d)
					f.Close()
					synctest.Wait()
					var last res
				drain:
					for {
						select {
						case last = <-resc:
						default:
							break drain
						}
					}
					if last.err != topic.ErrClosed {
						t.Errorf("Next after Close: %+v, %v; want ErrClosed", last.r, last.err)
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					defer cancel()
					if err := b.Shutdown(ctx); err != nil {
						t.Errorf("Shutdown: %v", err)
					}
				})
			})
		}
	}
}

// Close wakes every goroutine waiting on a follower with AckWait whose
// re-read timer is armed (Wait from two goroutines and Next: a misuse,
// whose end is still defined), before and after the re-read falls due.
func TestFollowCloseWithAnArmedReReadTimerWakesEveryWaiter(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprint("late=", late), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				b.RetainLatest(ackKvKey, topic.Retention{Count: 8})
				f := b.Follow(topic.Name[ackKv]("w"), topic.AckWait[ackKv](10*time.Millisecond))
				b.Publish(ackKv{1, 1})
				f.Read(make([]topic.Record[ackKv], 4))
				f.Read(make([]topic.Record[ackKv], 4)) // caught up
				var wg sync.WaitGroup
				errs := make([]error, 3)
				wg.Go(func() {
					for errs[0] == nil {
						errs[0] = f.Wait(context.Background())
						if errs[0] == nil {
							time.Sleep(time.Millisecond) // do not spin on a due re-read
						}
					}
				})
				wg.Go(func() {
					for errs[1] == nil {
						errs[1] = f.Wait(context.Background())
						if errs[1] == nil {
							time.Sleep(time.Millisecond)
						}
					}
				})
				if late {
					time.Sleep(30 * time.Millisecond)
				} else {
					synctest.Wait()
				}
				f.Close()
				wg.Wait()
				for i, err := range errs[:2] {
					if err != topic.ErrClosed {
						t.Errorf("waiter %d: %v, want ErrClosed", i, err)
					}
				}
			})
		})
	}
}

// A handler follower of a keyed log with AckWait and Retry, whose back-off
// is longer than AckWait: each value is handled until it succeeds, then
// committed; nothing is handled after it succeeded; Settle and Shutdown end.
func TestFollowKeyedHandlerWithAckWaitAndRetrySettles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.RetainLatest(ackKvKey, topic.Retention{Count: 64})
		var mu sync.Mutex
		calls := map[int]int{}
		done := map[int]int{}
		stop := b.Handle(func(_ context.Context, v ackKv) error {
			mu.Lock()
			defer mu.Unlock()
			calls[v.V]++
			if calls[v.V] < 3 {
				return fmt.Errorf("fail %d", calls[v.V])
			}
			done[v.V]++
			return nil
		}, topic.Follow[ackKv](), topic.Name[ackKv]("h"), topic.AckWait[ackKv](5*time.Millisecond),
			topic.Retry[ackKv](topic.RetryPolicy{Attempts: 5, Base: 20 * time.Millisecond}))
		defer stop()
		for i := range 6 {
			b.Publish(ackKv{i, i})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Settle(ctx); err != nil {
			t.Fatalf("Settle: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
		if !b.Seek[ackKv]("h", 2) {
			t.Fatal("no live follower h")
		}
		if err := b.Settle(ctx); err != nil {
			t.Fatalf("Settle after Seek: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		for i := range 6 {
			want := 1
			if i >= 2 {
				want = 2 // again from the Seek
			}
			if done[i] != want {
				t.Errorf("value %d handled successfully %d times, want %d (calls %v)", i, done[i], want, calls)
			}
		}
		mu.Unlock()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
}

// A channel follower of a keyed log with AckWait and Buffer(0), whose
// receiver is slower than AckWait: each value is received once (the
// channel took it: committed), in offset order.
func TestFollowKeyedChannelFollowerWithAckWaitReceivesEachValueOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.RetainLatest(ackKvKey, topic.Retention{Count: 64})
		ch, cancel := b.Subscribe(topic.Follow[ackKv](), topic.Name[ackKv]("c"), topic.Buffer[ackKv](0),
			topic.AckWait[ackKv](5*time.Millisecond), topic.Replay[ackKv](topic.Earliest()))
		for i := range 6 {
			b.Publish(ackKv{i, i})
		}
		var got []int
		for range 6 {
			time.Sleep(20 * time.Millisecond)
			got = append(got, (<-ch).V)
		}
		time.Sleep(100 * time.Millisecond)
		select {
		case v := <-ch:
			t.Errorf("received %v after all 6: read again", v)
		default:
		}
		cancel()
		if !slices.Equal(got, []int{0, 1, 2, 3, 4, 5}) {
			t.Errorf("received %v, want 0..5 once each", got)
		}
	})
}

// A readMark holds the reads of less than AckWait/64 as one run, so that a
// reader that never commits keeps about 64 runs per AckWait, however often
// it reads. A keyed log's kept offsets have gaps (the values replaced since):
// reads one at a time, at one instant, must still make one run.
func TestFollowAckWaitKeyedReadsOneAtATimeKeepOneRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.RetainLatest(ackKvKey, topic.Retention{Count: 1000})
		for k := range 100 {
			b.Publish(ackKv{k, 0})
		}
		for k := 0; k < 100; k += 2 {
			b.Publish(ackKv{k, 1}) // the kept offsets: 1, 3, ..., 99, then 100..149
		}
		f := b.Follow(topic.Name[ackKv]("k"), topic.Replay[ackKv](topic.Earliest()), topic.AckWait[ackKv](time.Second))
		defer f.Close()
		buf := make([]topic.Record[ackKv], 1)
		read := 0
		for f.Read(buf) == 1 {
			read++
		}
		if read != 100 {
			t.Fatalf("read %d values, want 100", read)
		}
		if n := topic.AckMarks(f); n != 1 {
			t.Errorf("%d runs of reads kept for 100 reads at one instant, want 1", n)
		}
		// The re-read reads them all again.
		time.Sleep(1001 * time.Millisecond)
		buf = make([]topic.Record[ackKv], 200)
		if n := f.Read(buf); n != 100 || buf[0].Offset != 1 || buf[n-1].Offset != 149 {
			t.Errorf("re-read %d values, want 100 from 1 to 149", n)
		}
	})
}
