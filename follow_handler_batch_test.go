package topic_test

// Tests of a handler follower's batch (it reads up to 16 values at once and
// hands them to its function one at a time): a Seek made while it holds one
// ends it, even one to where the read ended; what it has not handed out
// goes back to the log, and is counted once at a seal, on a ring or a keyed
// log; a stop, a fault, a retry, Settle and age retention meet it as they
// met a value read alone.

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

// A Seek to the offset where the batch's read ended (the tail here: "skip
// the backlog"), from the function, ends the batch.
func TestHandlerBatchSeekToBatchEndFromFunction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		retainOrders(&b, 10)
		var got []int
		stop := b.Handle(func(_ context.Context, v fOrder) error {
			got = append(got, v.N)
			if v.N == 2 {
				b.Seek[fOrder]("h", 10) // past everything published
			}
			return nil
		}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h"))
		synctest.Wait()
		stop()
		if want := []int{0, 1, 2}; !slices.Equal(got, want) {
			t.Errorf("handled %v, want %v (Seek(10) from the call with 2)", got, want)
		}
	})
}

// The same Seek from another goroutine while the function holds 0.
func TestHandlerBatchSeekToBatchEndFromOutside(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		retainOrders(&b, 10)
		var got []int
		release := make(chan struct{})
		stop := b.Handle(func(_ context.Context, v fOrder) error {
			got = append(got, v.N)
			if v.N == 0 {
				<-release
			}
			return nil
		}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h"))
		synctest.Wait()
		b.Seek[fOrder]("h", 10)
		close(release)
		synctest.Wait()
		stop()
		if want := []int{0}; !slices.Equal(got, want) {
			t.Errorf("handled %v, want %v (Seek(10) while 0 was in hand)", got, want)
		}
	})
}

// An OnLoss function that seeks, during the read, to where the read ends:
// only the value read first is handed out.
func TestHandlerBatchOnLossSeekToBatchEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 5})
		for n := range 10 {
			b.Publish(fOrder{n}) // 0..4 trimmed
		}
		var got []int
		once := sync.Once{}
		stop := b.Handle(func(_ context.Context, v fOrder) error {
			got = append(got, v.N)
			return nil
		}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.At(0)), topic.Name[fOrder]("h"),
			topic.OnLoss(func(l topic.Loss[fOrder]) {
				if l.Cause == topic.Skipped {
					once.Do(func() { b.Seek[fOrder]("h", 10) })
				}
			}))
		synctest.Wait()
		stop()
		if want := []int{5}; !slices.Equal(got, want) {
			t.Errorf("handled %v, want %v (OnLoss sought to 10 during the read of 5)", got, want)
		}
	})
}

// A Seek into the batch (here forward, to 5, from the call with 0), then a
// Shutdown whose context ends: the values from 5 on, never given to the
// function, are counted unread at the seal.
func TestHandlerBatchSeekIntoBatchThenShutdownCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		retainOrders(&b, 20)
		b.Handle(func(ctx context.Context, v fOrder) error {
			if v.N == 0 {
				b.Seek[fOrder]("h", 5)
			}
			<-ctx.Done()
			return ctx.Err()
		}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h"))
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
		if err := b.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := fsStats[fOrder](t, &b, "h")
		t.Logf("stats: sent %d matched %d lost %+v follower %+v handler %+v", st.Sent, st.Matched, st.Lost, *st.Follower, *st.Handler)
		// 0 in hand, discarded; 5..19 unread at the seal: Discarded too.
		if st.Lost.Discarded != 16 || st.Matched != 16 {
			t.Errorf("discarded %d, matched %d; want 16 and 16 (0 in hand, 5..19 unread)", st.Lost.Discarded, st.Matched)
		}
	})
}

// A keyed log (RetainLatest): a Shutdown whose context ends while the
// first value is in hand counts the others once, Discarded.
func TestHandlerBatchKeyedShutdownCutWithBatchInHand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.RetainLatest(fsKey, topic.Retention{Count: 100})
		for n := range 10 {
			b.Publish(fsK{K: n, N: n})
		}
		release := make(chan struct{})
		b.Handle(func(_ context.Context, v fsK) error {
			<-release // ignores its context
			return nil
		}, topic.Follow[fsK](), topic.Replay[fsK](topic.Earliest()), topic.Name[fsK]("h"))
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = b.Shutdown(ctx)
		close(release)
		if err := b.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := fsStats[fsK](t, &b, "h")
		t.Logf("stats: sent %d matched %d lost %+v follower %+v handler %+v", st.Sent, st.Matched, st.Lost, *st.Follower, *st.Handler)
		if st.Sent != 1 || st.Lost.Discarded != 9 || st.Matched != 10 {
			t.Errorf("sent %d, discarded %d, matched %d; want 1, 9, 10", st.Sent, st.Lost.Discarded, st.Matched)
		}
	})
}

// The same on a ring log, where the batch goes back to the log after the
// seal.
func TestHandlerBatchRingShutdownCutWithBatchInHand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		retainOrders(&b, 10)
		release := make(chan struct{})
		b.Handle(func(_ context.Context, v fOrder) error {
			<-release
			return nil
		}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h"))
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = b.Shutdown(ctx)
		close(release)
		if err := b.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := fsStats[fOrder](t, &b, "h")
		t.Logf("stats: sent %d matched %d lost %+v follower %+v handler %+v", st.Sent, st.Matched, st.Lost, *st.Follower, *st.Handler)
		if st.Sent != 1 || st.Lost.Discarded != 9 || st.Matched != 10 {
			t.Errorf("sent %d, discarded %d, matched %d; want 1, 9, 10", st.Sent, st.Lost.Discarded, st.Matched)
		}
	})
}

// The handler starts discarding between the read of a batch (of one, with
// AckWait) and its hand-out: here an OnLoss function, run by the read,
// calls Shutdown with an ended context. The value read is handed out, as
// one read alone was, and every value is counted.
func testHandlerBatchDiscardBetweenReadAndHandOut(t *testing.T, ack bool) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 5})
		for n := range 10 {
			b.Publish(fOrder{n}) // 0..4 trimmed
		}
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		var once sync.Once
		var calls int
		opts := []topic.Option[fOrder]{topic.Follow[fOrder](), topic.Replay[fOrder](topic.At(0)), topic.Name[fOrder]("h"),
			topic.OnLoss(func(l topic.Loss[fOrder]) {
				if l.Cause == topic.Skipped {
					once.Do(func() { _ = b.Shutdown(ended) })
				}
			})}
		if ack {
			opts = append(opts, topic.AckWait[fOrder](time.Minute))
		}
		b.Handle(func(_ context.Context, v fOrder) error {
			calls++
			return nil
		}, opts...)
		synctest.Wait()
		if err := b.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := fsStats[fOrder](t, &b, "h")
		t.Logf("calls %d; stats: sent %d matched %d lost %+v follower %+v handler %+v", calls, st.Sent, st.Matched, st.Lost, *st.Follower, *st.Handler)
		if st.Matched != 10 {
			t.Errorf("matched %d (sent %d, lost %+v), want 10: 5 skipped, 5 handled or discarded", st.Matched, st.Sent, st.Lost)
		}
	})
}

func TestHandlerBatchDiscardBetweenReadAndHandOutAckWait(t *testing.T) {
	testHandlerBatchDiscardBetweenReadAndHandOut(t, true)
}
func TestHandlerBatchDiscardBetweenReadAndHandOutPlain(t *testing.T) {
	testHandlerBatchDiscardBetweenReadAndHandOut(t, false)
}

// runtime.Goexit in the function mid-batch: the named follower resumes
// right after the value it abandoned.
func TestHandlerBatchGoexitMidBatchResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		retainOrders(&b, 10)
		var got []int
		b.Handle(func(_ context.Context, v fOrder) error {
			got = append(got, v.N)
			if v.N == 2 {
				runtime.Goexit()
			}
			return nil
		}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h"))
		synctest.Wait()
		stop := b.Handle(func(_ context.Context, v fOrder) error {
			got = append(got, v.N)
			return nil
		}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h"))
		synctest.Wait()
		stop()
		if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
			t.Errorf("handled %v, want %v", got, want)
		}
	})
}

// A panic mid-batch without Retry: the value is Errored, the rest handled.
func TestHandlerBatchPanicMidBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		retainOrders(&b, 10)
		var got []int
		b.Handle(func(_ context.Context, v fOrder) error {
			got = append(got, v.N)
			if v.N == 2 {
				panic("boom")
			}
			return nil
		}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h"))
		synctest.Wait()
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := fsStats[fOrder](t, &b, "h")
		if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
			t.Errorf("handled %v, want %v", got, want)
		}
		if st.Sent != 10 || st.Matched != 10 || st.Lost.Errored != 1 || st.Handler.Handled != 9 {
			t.Errorf("stats %+v %+v", st, *st.Handler)
		}
	})
}

// Retry with a back-off mid-batch, and a Seek back from outside during
// it: the retried value finishes, the rest of the batch is dropped and the
// handler reads on from the Seek.
func TestHandlerBatchRetryBackoffSeekFromOutside(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		retainOrders(&b, 10)
		var got []int
		fails := 1
		stop := b.Handle(func(_ context.Context, v fOrder) error {
			got = append(got, v.N)
			if v.N == 3 && fails > 0 {
				fails--
				return context.DeadlineExceeded
			}
			return nil
		}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h"),
			topic.Retry[fOrder](topic.RetryPolicy{Attempts: 3, Base: time.Second}))
		synctest.Wait() // in the back-off of 3
		b.Seek[fOrder]("h", 8)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		stop()
		if want := []int{0, 1, 2, 3, 3, 8, 9}; !slices.Equal(got, want) {
			t.Errorf("handled %v, want %v", got, want)
		}
	})
}

// Retry back-off mid-batch then a Shutdown whose context ends during it.
func TestHandlerBatchRetryBackoffShutdownCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		retainOrders(&b, 10)
		b.Handle(func(_ context.Context, v fOrder) error {
			if v.N == 3 {
				return context.DeadlineExceeded
			}
			return nil
		}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h"),
			topic.Retry[fOrder](topic.RetryPolicy{Attempts: 3, Base: time.Hour}))
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = b.Shutdown(ctx)
		if err := b.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := fsStats[fOrder](t, &b, "h")
		t.Logf("stats: sent %d matched %d lost %+v handler %+v", st.Sent, st.Matched, st.Lost, *st.Handler)
		if st.Sent != 4 || st.Handler.Handled != 3 || st.Lost.Discarded != 7 || st.Matched != 10 {
			t.Errorf("sent %d handled %d discarded %d matched %d; want 4 3 7 10", st.Sent, st.Handler.Handled, st.Lost.Discarded, st.Matched)
		}
	})
}

// Stop without DiscardOnStop while the function holds 0: nothing more
// of the batch is handled; the named follower resumes at 1.
func TestHandlerBatchStopMidBatchResumes(t *testing.T) {
	for _, discard := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			retainOrders(&b, 10)
			var got []int
			release := make(chan struct{})
			opts := []topic.Option[fOrder]{topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h")}
			if discard {
				opts = append(opts, topic.DiscardOnStop[fOrder]())
			}
			stop := b.Handle(func(_ context.Context, v fOrder) error {
				got = append(got, v.N)
				if v.N == 0 {
					<-release
				}
				return nil
			}, opts...)
			synctest.Wait()
			go stop()
			synctest.Wait()
			close(release)
			synctest.Wait()
			stop2 := b.Handle(func(_ context.Context, v fOrder) error {
				got = append(got, v.N)
				return nil
			}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h"))
			synctest.Wait()
			stop2()
			if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
				t.Errorf("discard=%v: handled %v, want %v", discard, got, want)
			}
		})
	}
}

// Record handler: Skipped is told once, on the right record, with a Seek
// back into trimmed territory mid-batch.
func TestHandlerBatchRecordSkippedWithSeek(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 5})
		for n := range 10 {
			b.Publish(fOrder{n})
		}
		type rec struct {
			off, skipped uint64
		}
		var got []rec
		sought := false
		stop := b.Handle(func(_ context.Context, r topic.Record[fOrder]) error {
			got = append(got, rec{r.Offset, r.Skipped})
			if r.Offset == 7 && !sought {
				sought = true
				b.Seek[fOrder]("h", 2)
			}
			return nil
		}, topic.Follow[topic.Record[fOrder]](), topic.Replay[topic.Record[fOrder]](topic.At(0)), topic.Name[topic.Record[fOrder]]("h"))
		synctest.Wait()
		stop()
		want := []rec{{5, 5}, {6, 0}, {7, 0}, {5, 3}, {6, 0}, {7, 0}, {8, 0}, {9, 0}}
		if !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
}

// Concurrency stress (run with -race): Seeks from outside, the
// function's calls, Subscriptions, then a Shutdown with a short context.
func TestHandlerBatchStressSeekShutdown(t *testing.T) {
	for round := range 30 {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 1000})
		for n := range 500 {
			b.Publish(fOrder{n})
		}
		var mu sync.Mutex
		seen := map[int]int{}
		b.Handle(func(ctx context.Context, v fOrder) error {
			mu.Lock()
			seen[v.N]++
			mu.Unlock()
			return nil
		}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h"))
		var wg sync.WaitGroup
		stopSeek := make(chan struct{})
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stopSeek:
					return
				default:
				}
				b.Seek[fOrder]("h", uint64((i*37)%500))
				_ = b.Subscriptions()
				runtime.Gosched()
			}
		})
		wg.Go(func() {
			for n := 500; n < 800; n++ {
				b.Publish(fOrder{n})
			}
		})
		time.Sleep(time.Millisecond)
		close(stopSeek)
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(round%3)*time.Microsecond)
		_ = b.Shutdown(ctx)
		cancel()
		if err := b.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := fsStats[fOrder](t, &b, "h")
		if st.Sent != st.Handler.Accepted {
			t.Errorf("round %d: sent %d accepted %d", round, st.Sent, st.Handler.Accepted)
		}
	}
}

// Settle while the function holds the first value of a batch: it
// returns only once every value is handled.
func TestHandlerBatchSettleWithBatchInHand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		retainOrders(&b, 10)
		var handled int
		stop := b.Handle(func(_ context.Context, v fOrder) error {
			if v.N == 0 {
				time.Sleep(time.Second)
			}
			handled++
			return nil
		}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()))
		if err := b.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		if handled != 10 {
			t.Errorf("Settle returned with %d handled, want 10", handled)
		}
		stop()
	})
}

// Age retention: the batch's values age out while the first is in
// hand, then a Shutdown whose context ends: each value counted once.
func TestHandlerBatchAgeTrimWhileInBatchShutdownCut(t *testing.T) {
	for _, cut := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			b.Retain[fOrder](topic.Retention{Count: 100, Age: time.Second})
			for n := range 10 {
				b.Publish(fOrder{n})
			}
			b.Handle(func(ctx context.Context, v fOrder) error {
				if v.N == 0 {
					time.Sleep(2 * time.Second)
				}
				return nil
			}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h"))
			synctest.Wait()
			time.Sleep(time.Second + time.Second/2) // 1..9 aged out, 0 still in hand
			ctx, cancel := context.WithCancel(context.Background())
			if cut {
				cancel()
			}
			_ = b.Shutdown(ctx)
			cancel()
			if err := b.Settle(context.Background()); err != nil {
				t.Fatal(err)
			}
			st := fsStats[fOrder](t, &b, "h")
			t.Logf("cut=%v stats: sent %d matched %d lost %+v handler %+v", cut, st.Sent, st.Matched, st.Lost, *st.Handler)
			if st.Matched != 10 {
				t.Errorf("cut=%v: matched %d, want 10", cut, st.Matched)
			}
		})
	}
}

// Stress without Seek: DiscardOnStop from outside at a random moment,
// then the name resumes: every value handled once, or discarded in hand.
func TestHandlerBatchStressStopResume(t *testing.T) {
	for round := range 200 {
		var b topic.Broker
		b.Retain[fOrder](topic.Retention{Count: 1000})
		const N = 300
		for n := range N {
			b.Publish(fOrder{n})
		}
		var mu sync.Mutex
		seen := map[int]int{}
		var lost []int
		opts := []topic.Option[fOrder]{topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h")}
		f := func(ctx context.Context, v fOrder) error {
			mu.Lock()
			seen[v.N]++
			mu.Unlock()
			return nil
		}
		stop := b.Handle(f, append(opts, topic.DiscardOnStop[fOrder](), topic.OnLoss(func(l topic.Loss[fOrder]) {
			mu.Lock()
			lost = append(lost, l.Value.N)
			mu.Unlock()
		}))...)
		for range round % 50 {
			runtime.Gosched()
		}
		stop()
		stop2 := b.Handle(f, opts...)
		if err := b.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		stop2()
		for n := range N {
			if seen[n] != 1 && !(seen[n] == 0 && slices.Contains(lost, n)) {
				t.Fatalf("round %d: value %d handled %d times (lost %v)", round, n, seen[n], lost)
			}
		}
	}
}

// A handler follower reads what the log has in batches and hands the values
// to its function one at a time: what it has read and not handed out goes
// back to the log when a Shutdown whose context ends discards, so that the
// seal counts it, each value once.
func TestHandlerBatchGoesBackToTheLogAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		retainOrders(&b, 10)
		var calls atomic.Int32
		b.Handle(func(ctx context.Context, v fOrder) error {
			calls.Add(1)
			<-ctx.Done() // holds the first value until Shutdown gives up
			return ctx.Err()
		}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h"))
		synctest.Wait() // in the call with offset 0, the batch read
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err == nil {
			t.Fatal("Shutdown returned nil, want its context's error")
		}
		synctest.Wait() // the worker ends
		st := fsStats[fOrder](t, &b, "h")
		if calls.Load() != 1 || st.Handler.Handled != 0 {
			t.Fatalf("%d calls, %d handled; want 1 call, none handled", calls.Load(), st.Handler.Handled)
		}
		if got := st.Lost.Total(); got != 10 || st.Matched != 10 {
			t.Errorf("lost %+v (%d in all), matched %d; want all 10 lost, each once", st.Lost, got, st.Matched)
		}
	})
}

// A Seek made while a handler follower holds a batch (here from its own
// function) wins: what the batch holds after the value in hand is not
// handed out, and the handler reads on from where the Seek moved it, back
// or forward.
func TestHandlerBatchSeekDropsTheRestOfItsBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		retainOrders(&b, 10)
		var got []int
		seeks := map[int]uint64{2: 0, 4: 7} // on the value, the offset to seek to; once each
		stop := b.Handle(func(_ context.Context, v fOrder) error {
			got = append(got, v.N)
			if o, ok := seeks[v.N]; ok {
				delete(seeks, v.N)
				if !b.Seek[fOrder]("h", o) {
					t.Error("Seek found no live follower named h")
				}
			}
			return nil
		}, topic.Follow[fOrder](), topic.Replay[fOrder](topic.Earliest()), topic.Name[fOrder]("h"))
		synctest.Wait()
		stop()
		if want := []int{0, 1, 2, 0, 1, 2, 3, 4, 7, 8, 9}; !slices.Equal(got, want) {
			t.Errorf("handled %v, want %v", got, want)
		}
	})
}
