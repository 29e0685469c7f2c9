package topic_test

// Tests of handler followers (Handle with Follow): a value is committed
// once handled, also one that panicked, failed its retries or was
// dead-lettered, and is not handled again under the name; retries keep the
// order; a handler stopped during a back-off resumes under its name with
// the next value; its function and OnLoss may call back into the broker;
// with AckWait, a replay after Broker.Seek and a slow handler end.

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

// A follower handler whose function panics on a value (no Retry: the value
// is lost, Errored) must commit it like any lost value; with AckWait it
// must not handle it again.
func TestFollowHandlerFollowerCommitsAPanickedValue(t *testing.T) {
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
func TestFollowHandlerFollowerPanickedValueIsNotRedeliveredOnResume(t *testing.T) {
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

// A handler follower with Retry keeps the order and loses nothing, and
// Shutdown drains it to the end of the log.
func TestFollowHandlerFollowerWithRetryKeepsOrderAndDrains(t *testing.T) {
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

// A durable handler follower stopped during a retry's back-off finishes
// the value, commits it, and one restarted under its name carries on with
// the next: every value handled once, in order.
func TestFollowHandlerFollowerStoppedDuringBackoffResumesWithTheNext(t *testing.T) {
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

// A stopped handler follower keeps its name while its last call runs: a
// handler started under the name meanwhile panics, rather than handle the
// value in flight beside it (with nothing committed yet, from the name's
// start; with a value committed, from after it); once the stop has
// returned, one started again resumes after the value the call handled.
// So too when its Context ends, which stops it without waiting.
func TestFollowHandlerFollowerKeepsItsNameUntilItsLastCallReturns(t *testing.T) {
	for _, c := range []struct{ committed, byContext bool }{{false, false}, {true, false}, {false, true}} {
		committed := c.committed
		t.Run(fmt.Sprintf("committed=%v/context=%v", committed, c.byContext), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				b.Retain[fOrder](topic.Retention{Count: 100})
				slow := 0 // the value whose call the stop waits for
				if committed {
					slow = 1
				}
				release := make(chan struct{})
				var first []int
				opts := []topic.Option[fOrder]{topic.Follow[fOrder](), topic.Name[fOrder]("h")}
				ctx, end := context.WithCancel(context.Background())
				defer end()
				stop := b.Handle(func(_ context.Context, v fOrder) error {
					first = append(first, v.N)
					if v.N == slow {
						<-release
					}
					return nil
				}, append(opts, topic.Context[fOrder](ctx))...)
				for n := range slow + 2 {
					b.Publish(fOrder{n})
				}
				synctest.Wait() // in the call of slow
				stopped := make(chan struct{})
				if c.byContext {
					end() // stops it, and waits for nothing
					close(stopped)
				} else {
					go func() { stop(); close(stopped) }()
				}
				synctest.Wait() // the stop, or the Context's end, waits for the call
				var second []int
				again := func() func() {
					return b.Handle(func(_ context.Context, v fOrder) error {
						second = append(second, v.N)
						return nil
					}, opts...)
				}
				msg, panicked := panicMessage(func() { again()() })
				if !panicked || !strings.HasPrefix(msg, "topic: ") || !strings.Contains(msg, `"h"`) {
					t.Errorf("committed %v: a handler started under the name while the last call ran: panicked %v with %q; handled %v", committed, panicked, msg, second)
				}
				close(release)
				<-stopped
				synctest.Wait() // its goroutine has ended
				stop2 := again()
				synctest.Wait()
				stop2()
				all := []int{0, 1, 2}[:slow+2] // published
				if !slices.Equal(first, all[:slow+1]) || !slices.Equal(second, all[slow+1:]) {
					t.Errorf("committed %v: the stopped handler handled %v, the one started again %v; want %v then %v", committed, first, second, all[:slow+1], all[slow+1:])
				}
			})
		})
	}
}

// Dead letters of a follower handler: published, the value committed.
func TestFollowHandlerFollowerPublishesDeadLettersAndCommitsThem(t *testing.T) {
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

// A handler follower's function and OnLoss may call back into the broker:
// its own stop, Broker.Seek of its own name, Follow, Shutdown.
func TestFollowHandlerFollowerMayCallBackIntoTheBroker(t *testing.T) {
	for _, what := range []string{"stop", "seek", "follow", "shutdown", "onloss-stop", "onloss-shutdown"} {
		t.Run(what, func(t *testing.T) {
			var b topic.Broker
			b.Retain[fVal](topic.Retention{Count: 2})
			var stop func()
			ready := make(chan struct{})
			var handled []int
			var mu sync.Mutex
			var once sync.Once
			gate := make(chan struct{})
			stop = b.Handle(func(ctx context.Context, v fVal) error {
				<-ready
				if v.N == 0 {
					<-gate // hold 0 until the rest is published and trimmed
				}
				mu.Lock()
				handled = append(handled, v.N)
				mu.Unlock()
				once.Do(func() {
					switch what {
					case "stop":
						stop()
					case "seek":
						if !b.Seek[fVal]("h", 0) {
							t.Error("Seek of its own name found none")
						}
					case "follow":
						g := b.Follow[fVal]()
						g.Close()
					case "shutdown":
						b.Shutdown(context.Background())
					}
				})
				return nil
			}, topic.Follow[fVal](), topic.Name[fVal]("h"), topic.Replay[fVal](topic.Earliest()),
				topic.OnLoss(func(l topic.Loss[fVal]) {
					switch what {
					case "onloss-stop":
						stop()
					case "onloss-shutdown":
						b.Shutdown(context.Background())
					}
				}))
			close(ready)
			b.Publish(fVal{0})
			for n := 1; n <= 10; n++ {
				b.Publish(fVal{n})
			}
			close(gate)
			fWithin(t, 10*time.Second, what, func() {
				if strings.HasSuffix(what, "stop") {
					stop()
				}
				if err := b.Shutdown(context.Background()); err != nil {
					t.Error(err)
				}
			})
			if g := b.Goroutines(); g != 0 {
				t.Errorf("%d goroutines after Shutdown", g)
			}
			if strings.HasSuffix(what, "stop") {
				return // stopped before Shutdown: not in its final counts
			}
			st := b.Subscriptions()
			if len(st) != 1 {
				t.Fatalf("%d final subscriptions", len(st))
			}
			// What the handler never read, if the seal came first (a
			// Shutdown from its own function does not wait for it), is
			// Discarded without being accepted.
			s, l := st[0], st[0].Lost
			unread := s.Matched - s.Sent - s.Rejected - l.Full - l.Failed - l.Closed - l.Skipped
			h := s.Handler
			if h.Accepted+unread != h.Handled+l.Errored+l.Discarded {
				t.Errorf("accepted %d + unread %d != handled %d + lost %+v", h.Accepted, unread, h.Handled, l)
			}
			mu.Lock()
			if uint64(len(handled)) != h.Handled {
				t.Errorf("handled %v, stats say %d", handled, h.Handled)
			}
			mu.Unlock()
		})
	}
}

// A handler follower with AckWait moved back by Broker.Seek to replay what
// it handled: it handles each value once more and catches up. When the
// replay takes longer than AckWait, its commits (all below the commit it
// made before) do nothing, and AckWait sent it back to the Seek's offset
// again and again.
func TestFollowHandlerAckWaitReplayAfterBrokerSeekEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 64})
		var handled atomic.Int64
		stop := b.Handle(func(context.Context, fVal) error {
			handled.Add(1)
			time.Sleep(4 * time.Millisecond)
			return nil
		}, topic.Follow[fVal](), topic.Name[fVal]("h"), topic.AckWait[fVal](10*time.Millisecond))
		defer stop()
		for i := range 10 {
			b.Publish(fVal{i})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.Settle(ctx); err != nil || handled.Load() != 10 {
			t.Fatalf("Settle: %v, %d handled, want 10", err, handled.Load())
		}
		if !b.Seek[fVal]("h", 0) {
			t.Fatal("no live follower named h")
		}
		if err := b.Settle(ctx); err != nil || handled.Load() != 20 {
			t.Errorf("Settle after Seek(0): %v, with %d handled; want nil and 20 (each value once more)", err, handled.Load())
		}
	})
}

// Held: a handler follower with AckWait in a bubble, whose handler takes
// longer than AckWait, handles each value once; Settle and Shutdown end.
func TestFollowHandlerAckWaitSlowHandlerInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fVal](topic.Retention{Count: 64, Age: time.Second})
		var handled atomic.Int64
		b.Handle(func(context.Context, fVal) error {
			handled.Add(1)
			time.Sleep(25 * time.Millisecond)
			return nil
		}, topic.Follow[fVal](), topic.Name[fVal]("h"), topic.AckWait[fVal](10*time.Millisecond))
		for i := range 5 {
			b.Publish(fVal{i})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Settle(ctx); err != nil || handled.Load() != 5 {
			t.Fatalf("Settle: %v, %d handled, want 5", err, handled.Load())
		}
		time.Sleep(3 * time.Second) // all aged out; timers long due
		if err := b.Shutdown(ctx); err != nil || handled.Load() != 5 {
			t.Fatalf("Shutdown: %v, %d handled, want 5", err, handled.Load())
		}
	})
}
