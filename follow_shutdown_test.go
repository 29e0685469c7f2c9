package topic_test

// Tests of what a follower lost when Shutdown closed it (see Shutdown):
// counted from where its log stood at the seal, once, whatever reads race
// the seal, whatever the age bound trims after, and without a lock order
// that a replay of the same log could turn into a deadlock.

import (
	"context"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

type (
	fsA struct{ N int }
	fsK struct{ K, N int }
)

func fsKey(v fsK) int { return v.K }

// fsStats returns the one entry of Subscriptions of type T and name.
func fsStats[T any](t *testing.T, b *topic.Broker, name string) topic.SubscriptionStats {
	t.Helper()
	var found []topic.SubscriptionStats
	for _, st := range b.Subscriptions() {
		if st.Type == reflect.TypeFor[T]() && st.Name == name {
			found = append(found, st)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one subscription of %v named %q, got %d", reflect.TypeFor[T](), name, len(found))
	}
	return found[0]
}

// fsRounds is how many times the racing tests race.
const fsRounds = 50

// A keyed follower's log is read at the seal under the log's sequencing
// point, which a replay of the same log holds while it takes Broker.mu:
// Shutdown must not take them in the other order. Shutdown runs while a
// Subscribe replays a large keyed log; a deadlock hangs the test.
func TestShutdownWithAKeyedFollowerDoesNotDeadlockWithAReplay(t *testing.T) {
	var b topic.Broker
	b.RetainLatest(fsKey, topic.Retention{Count: 1 << 17})
	for i := range 1 << 16 {
		b.Publish(fsK{K: i, N: i})
	}
	_ = b.Follow[fsK]() // a keyed follower, whose log the seal reads
	replayed := make(chan struct{})
	go func() {
		defer close(replayed)
		b.Subscribe(topic.Replay[fsK](topic.Earliest()), topic.Buffer[fsK](1))
	}()
	runtime.Gosched() // the replay under way, or not: either order must end
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-replayed
}

// Values aged out at the seal, though nothing trimmed them yet, are
// Skipped (retention trimmed them before the follower reached them).
func TestValuesAgedOutAtTheSealAreCountedSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fsA](topic.Retention{Count: 100, Age: time.Second})
		f := b.Follow[fsA]()
		_ = f
		for i := 0; i < 5; i++ {
			b.Publish(fsA{i})
		}
		time.Sleep(600 * time.Millisecond)
		for i := 5; i < 10; i++ {
			b.Publish(fsA{i})
		}
		time.Sleep(600 * time.Millisecond) // the first 5 aged out, untrimmed
		_ = b.Shutdown(context.Background())
		st := fsStats[fsA](t, &b, "")
		if st.Lost.Skipped != 5 || st.Lost.Closed != 5 {
			t.Errorf("lost %+v, want Skipped 5 Closed 5", st.Lost)
		}
		time.Sleep(5 * time.Second)
		if st2 := fsStats[fsA](t, &b, ""); st2.Lost != st.Lost {
			t.Errorf("counts changed after time passed: %+v then %+v", st.Lost, st2.Lost)
		}
	})
}

// fsReadRacingShutdown publishes n values of T, value(i) the i-th, on the
// broker that start makes (its retention declared), starts the follower
// that start returns reading them on a goroutine of its own (read returns
// how many it got before the follower ended), and runs Shutdown beside it,
// fsRounds times: what the reader got and what the follower lost must add
// up to n each time, nothing counted twice.
func fsReadRacingShutdown[T any](t *testing.T, n int, value func(i int) T, start func(b *topic.Broker) (read func() uint64)) {
	t.Helper()
	for round := range fsRounds {
		var b topic.Broker
		read := start(&b)
		for i := range n {
			b.Publish(value(i))
		}
		got := make(chan uint64)
		go func() { got <- read() }()
		_ = b.Shutdown(context.Background())
		k := <-got
		if st := fsStats[T](t, &b, ""); k+st.Lost.Total() != uint64(n) {
			t.Fatalf("round %d: read %d, lost %+v: want %d in all", round, k, st.Lost, n)
		}
	}
}

// fsPull returns a read of fsReadRacingShutdown for a pull follower: one
// record at a time until it reads none.
func fsPull[T any](f *topic.Follower[T]) func() uint64 {
	return func() uint64 {
		var got uint64
		buf := make([]topic.Record[T], 1)
		for f.Read(buf) == 1 {
			got++
		}
		return got
	}
}

// fsReceive returns a read of fsReadRacingShutdown for a channel follower:
// every value until the channel is closed.
func fsReceive[T any](ch <-chan T) func() uint64 {
	return func() uint64 {
		var got uint64
		for range ch {
			got++
		}
		return got
	}
}

// A pull follower's Read racing Shutdown: read and counted add up.
func TestAPullReadRacingShutdownIsCountedOnce(t *testing.T) {
	fsReadRacingShutdown(t, 2000, func(i int) fsA { return fsA{i} }, func(b *topic.Broker) func() uint64 {
		b.Retain[fsA](topic.Retention{Count: 1 << 12})
		return fsPull(b.Follow[fsA]())
	})
}

// A keyed pull follower's Read racing Shutdown: what it read is its
// reader's, the rest lost, nothing counted twice.
func TestAKeyedPullReadRacingShutdownIsCountedOnce(t *testing.T) {
	fsReadRacingShutdown(t, 300, func(i int) fsK { return fsK{K: i} }, func(b *topic.Broker) func() uint64 {
		b.RetainLatest(fsKey, topic.Retention{Count: 1 << 12})
		return fsPull(b.Follow[fsK]())
	})
}

// A keyed channel follower racing Shutdown: received and counted add up.
func TestAKeyedChannelFollowerRacingShutdownIsCountedOnce(t *testing.T) {
	fsReadRacingShutdown(t, 300, func(i int) fsK { return fsK{K: i} }, func(b *topic.Broker) func() uint64 {
		b.RetainLatest(fsKey, topic.Retention{Count: 1 << 12})
		ch, _ := b.Subscribe(topic.Follow[fsK](), topic.Buffer[fsK](0))
		return fsReceive(ch)
	})
}

// A follower with AckWait and uncommitted reads: what it read was
// received, so it is not lost at Shutdown, whether or not a re-read of it
// had begun.
func TestReadButUncommittedValuesAreNotLostAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		run := func(rereadOne bool) topic.Lost {
			var b topic.Broker
			b.Retain[fsA](topic.Retention{Count: 100})
			f := b.Follow[fsA](topic.Name[fsA]("d"), topic.AckWait[fsA](time.Second))
			for i := 0; i < 10; i++ {
				b.Publish(fsA{i})
			}
			buf := make([]topic.Record[fsA], 10)
			if n := f.Read(buf); n != 10 {
				t.Fatalf("read %d", n)
			}
			time.Sleep(2 * time.Second) // a re-read is due
			if rereadOne {
				if n := f.Read(buf[:1]); n != 1 || buf[0].Offset != 0 {
					t.Fatalf("re-read %d %+v", n, buf[0])
				}
			}
			_ = b.Shutdown(context.Background())
			return fsStats[fsA](t, &b, "d").Lost
		}
		a, c := run(false), run(true)
		if a != c {
			t.Errorf("read all 10 (uncommitted): lost %+v without a re-read begun, %+v with one begun", a, c)
		}
	})
}

// A channel follower whose pump holds a value at the seal: it is counted
// once, Closed, and what was received and counted add up.
func TestAChannelFollowersPumpHoldingAValueAtShutdownCountsItOnce(t *testing.T) {
	var b topic.Broker
	b.Retain[fsA](topic.Retention{Count: 100})
	ch, _ := b.Subscribe(topic.Follow[fsA](), topic.Buffer[fsA](1))
	for i := 0; i < 5; i++ {
		b.Publish(fsA{i})
	}
	time.Sleep(20 * time.Millisecond) // the pump fills the channel and holds the next
	_ = b.Shutdown(context.Background())
	got := 0
	for range ch {
		got++
	}
	st := fsStats[fsA](t, &b, "")
	if uint64(got)+st.Lost.Total() != 5 || st.Lost.Closed != uint64(5-got) {
		t.Errorf("received %d, lost %+v; want 5 in all", got, st.Lost)
	}
	st2 := fsStats[fsA](t, &b, "")
	if st2.Lost != st.Lost {
		t.Errorf("changed %+v -> %+v", st.Lost, st2.Lost)
	}
	// publications after Shutdown: counted Closed once each
	for i := 0; i < 3; i++ {
		b.Publish(fsA{i})
	}
	st3 := fsStats[fsA](t, &b, "")
	if uint64(got)+st3.Lost.Total() != 8 {
		t.Errorf("after 3 more: received %d lost %+v, want 8 in all", got, st3.Lost)
	}
}

// A buffered channel follower, whose pump reads and sends what its channel
// has room for at once, racing Shutdown while retention trims what it has
// not reached: received and counted (Skipped, Closed) add up.
func TestABufferedChannelFollowerRacingShutdownIsCountedOnce(t *testing.T) {
	fsReadRacingShutdown(t, 2000, func(i int) fsA { return fsA{i} }, func(b *topic.Broker) func() uint64 {
		b.Retain[fsA](topic.Retention{Count: 64})
		ch, _ := b.Subscribe(topic.Follow[fsA](), topic.Buffer[fsA](16))
		return fsReceive(ch)
	})
}

// A buffered keyed channel follower racing Shutdown: received and counted
// add up.
func TestABufferedKeyedChannelFollowerRacingShutdownIsCountedOnce(t *testing.T) {
	fsReadRacingShutdown(t, 300, func(i int) fsK { return fsK{K: i} }, func(b *topic.Broker) func() uint64 {
		b.RetainLatest(fsKey, topic.Retention{Count: 1 << 12})
		ch, _ := b.Subscribe(topic.Follow[fsK](), topic.Buffer[fsK](16))
		return fsReceive(ch)
	})
}

// A buffered channel follower of records racing Shutdown, its receiver
// slow: received, counted, and the records' Skipped fields agree.
func TestABufferedRecordChannelFollowerRacingShutdownIsCountedOnce(t *testing.T) {
	const n = 2000
	for round := range fsRounds {
		var b topic.Broker
		b.Retain[fsA](topic.Retention{Count: 64})
		ch, _ := b.Subscribe(topic.Follow[topic.Record[fsA]](), topic.Buffer[topic.Record[fsA]](16))
		for i := range n {
			b.Publish(fsA{i})
		}
		type result struct{ got, skipped uint64 }
		res := make(chan result)
		go func() {
			var r result
			next := uint64(0)
			for rec := range ch {
				if rec.Offset != next+rec.Skipped || rec.Value.N != int(rec.Offset) {
					t.Errorf("round %d: record %+v after offset %d", round, rec, int64(next)-1)
				}
				next = rec.Offset + 1
				r.got++
				r.skipped += rec.Skipped
				if r.got%7 == 0 {
					runtime.Gosched()
				}
			}
			res <- r
		}()
		_ = b.Shutdown(context.Background())
		r := <-res
		st := fsStats[topic.Record[fsA]](t, &b, "")
		if r.got+st.Lost.Total() != n {
			t.Fatalf("round %d: received %d, lost %+v: want %d in all", round, r.got, st.Lost, n)
		}
		if r.skipped > st.Lost.Skipped {
			t.Fatalf("round %d: records tell %d skipped, counted %d", round, r.skipped, st.Lost.Skipped)
		}
	}
}

// Publications racing Shutdown count once for every follower, whatever
// the moment each was frozen: a publication that loaded its route before
// the seal used to append to the log after some followers had recorded
// where it stood, and was then neither unread nor Closed for them, where
// the followers frozen after it counted it. Each follower here reads
// nothing, so each must count every publication: unread at the seal, or
// Closed after it.
func TestPublicationsRacingShutdownCountOnceForEveryFollower(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 40
	}
	const publishers, each, followers = 2, 500, 3
	for round := range rounds {
		var b topic.Broker
		b.Retain[fsA](topic.Retention{Count: publishers * each})
		for i := range followers {
			b.Follow(topic.Name[fsA](string(rune('a' + i))))
		}
		var wg sync.WaitGroup
		for range publishers {
			wg.Go(func() {
				for i := range each {
					b.Publish(fsA{i})
				}
			})
		}
		for range round % 50 * 10 {
			runtime.Gosched()
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for i := range followers {
			st := fsStats[fsA](t, &b, string(rune('a'+i)))
			if st.Matched != publishers*each || st.Lost.Closed != publishers*each {
				t.Fatalf("round %d: follower %c matched %d, closed %d, of %d publications", round, 'a'+i, st.Matched, st.Lost.Closed, publishers*each)
			}
		}
	}
}
