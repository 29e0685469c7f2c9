package topic_test

// Tests of what a follower lost when Shutdown closed it (see Shutdown):
// counted from where its log stood at the seal, once, whatever reads race
// the seal, whatever the age bound trims after, and without a lock order
// that a replay of the same log could turn into a deadlock.

import (
	"context"
	"reflect"
	"runtime"
	"sync/atomic"
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

// A keyed pull follower's Read racing Shutdown: what it read is its
// reader's, the rest lost, nothing counted twice.
func TestAKeyedPullReadRacingShutdownIsCountedOnce(t *testing.T) {
	for round := range fsRounds {
		var b topic.Broker
		b.RetainLatest(fsKey, topic.Retention{Count: 1 << 12})
		f := b.Follow[fsK]()
		const n = 300
		for i := 0; i < n; i++ {
			b.Publish(fsK{K: i})
		}
		var got atomic.Uint64
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]topic.Record[fsK], 1)
			for {
				k := f.Read(buf)
				if k == 0 {
					return
				}
				got.Add(uint64(k))
			}
		}()
		_ = b.Shutdown(context.Background())
		<-done
		st := fsStats[fsK](t, &b, "")
		if got.Load()+st.Lost.Total() != n {
			t.Fatalf("round %d: read %d, lost %+v: want %d in all", round, got.Load(), st.Lost, n)
		}
	}
}

// A keyed channel follower racing Shutdown: received and counted add up.
func TestAKeyedChannelFollowerRacingShutdownIsCountedOnce(t *testing.T) {
	for round := range fsRounds {
		var b topic.Broker
		b.RetainLatest(fsKey, topic.Retention{Count: 1 << 12})
		ch, _ := b.Subscribe(topic.Follow[fsK](), topic.Buffer[fsK](0))
		const n = 300
		for i := 0; i < n; i++ {
			b.Publish(fsK{K: i})
		}
		var got atomic.Uint64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range ch {
				got.Add(1)
			}
		}()
		_ = b.Shutdown(context.Background())
		<-done
		st := fsStats[fsK](t, &b, "")
		if got.Load()+st.Lost.Total() != n {
			t.Fatalf("round %d: received %d, lost %+v: want %d in all", round, got.Load(), st.Lost, n)
		}
	}
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

// A pull follower's Read racing Shutdown: read and counted add up.
func TestAPullReadRacingShutdownIsCountedOnce(t *testing.T) {
	for round := range fsRounds {
		var b topic.Broker
		b.Retain[fsA](topic.Retention{Count: 1 << 12})
		f := b.Follow[fsA]()
		const n = 2000
		for i := 0; i < n; i++ {
			b.Publish(fsA{i})
		}
		var got atomic.Uint64
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]topic.Record[fsA], 1)
			for {
				k := f.Read(buf)
				if k == 0 {
					return
				}
				got.Add(uint64(k))
			}
		}()
		_ = b.Shutdown(context.Background())
		<-done
		st := fsStats[fsA](t, &b, "")
		if got.Load()+st.Lost.Total() != n {
			t.Fatalf("round %d: read %d, lost %+v: want %d in all", round, got.Load(), st.Lost, n)
		}
	}
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
