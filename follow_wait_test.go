package topic_test

// How a follower waits: woken by each publication that finds it waiting
// (a channel follower's pump, caught up, is handed the value instead), and
// by nothing else: an idle follower, of any kind, costs no processor.

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

type idleTick struct{ N int }

// Followers of every kind that have read all there is are not woken while
// nothing is published: over a second (of a synctest bubble's time, in
// which a timer or a sleep would fire) none returns from its wait, and a
// publication wakes each of them again. That synctest.Wait returns at all
// shows none spins: it waits until every goroutine of the bubble is
// blocked.
func TestAnIdleFollowerIsNeverWoken(t *testing.T) {
	for _, r := range []topic.Retention{{Count: 64}, {Count: 64, Age: time.Minute}, {Count: 64, NoTime: true}} {
		t.Run(fmt.Sprintf("%+v", r), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				defer b.Shutdown(context.Background())
				b.Retain[idleTick](r)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()

				got := make(chan int, 64)
				ch, stop := b.Subscribe(topic.Follow[idleTick](), topic.Name[idleTick]("channel"))
				defer stop()
				go func() {
					for v := range ch {
						got <- v.N
					}
				}()
				stopH := b.Handle(func(_ context.Context, v idleTick) error {
					got <- v.N
					return nil
				}, topic.Follow[idleTick](), topic.Name[idleTick]("handler"))
				defer stopH()
				for _, name := range []string{"waiting", "acking"} {
					opts := []topic.Option[idleTick]{topic.Name[idleTick](name)}
					if name == "acking" {
						opts = append(opts, topic.AckWait[idleTick](time.Second))
					}
					f := b.Follow(opts...)
					defer f.Close()
					go func() {
						buf := make([]topic.Record[idleTick], 8)
						for f.Wait(ctx) == nil {
							for _, rec := range buf[:f.Read(buf)] {
								got <- rec.Value.N
								f.Commit(rec.Offset)
							}
						}
					}()
				}
				names := []string{"channel", "handler", "waiting", "acking"}
				wakes := func() map[string]uint64 {
					m := map[string]uint64{}
					for _, n := range names {
						m[n] = topic.Wakes[idleTick](&b, n)
					}
					return m
				}

				publish := func(n int) {
					b.Publish(idleTick{n})
					for range names {
						if v := <-got; v != n {
							t.Fatalf("read %d, want %d", v, n)
						}
					}
					synctest.Wait() // every follower waits again
				}
				publish(1)
				before := wakes()
				time.Sleep(time.Second)
				synctest.Wait()
				for n, w := range wakes() {
					if w != before[n] {
						t.Errorf("the %s follower was woken %d times in an idle second", n, w-before[n])
					}
				}
				publish(2)
				for n, w := range wakes() {
					switch {
					case n == "channel" && w != before[n]:
						// Caught up, it is handed each value (see
						// TestFollowACaughtUpChannelFollowerIsHandedValuesWithoutItsPump).
						t.Errorf("the channel follower's pump was woken %d times by a publication its channel had room for", w-before[n])
					case n != "channel" && w == before[n]:
						t.Errorf("the %s follower was not woken by a publication: the count of wake-ups counts nothing", n)
					}
				}
			})
		})
	}
}
