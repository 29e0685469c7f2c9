package topic_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

type (
	r2A struct{ N int }
	r2B struct{ N int }
	r2C struct{ N int }
	r2D struct{ N int }
	r2K struct{ N int }
)

// r2Recover runs f and returns what it panicked with, if anything.
func r2Recover(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// r2Within runs f on a goroutine and fails if it does not return within d.
func r2Within(t *testing.T, d time.Duration, what string, f func()) bool {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Errorf("%s: hung for %v\n%s", what, d, r2Topic(buf[:n]))
		return false
	}
}

// r2Topic keeps the goroutines of the stack dump that are in the topic
// package.
func r2Topic(dump []byte) string {
	var out []string
	for _, g := range strings.Split(string(dump), "\n\n") {
		if strings.Contains(g, "seedaa7df82c/topic.") && !strings.Contains(g, "r2Within") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// ---------------------------------------------------------------------------
// Dead-letter detection on pointers to records.

// A From source whose type is a pointer to a Record: a valid source type
// (Publish accepts any type), yet Subscribe panics.
func TestAFromSourceOfAPointerToARecordSubscribes(t *testing.T) {
	var b topic.Broker
	p := r2Recover(func() {
		ch, _ := b.Subscribe(topic.Buffer[int](4),
			topic.From(func(r *topic.Record[int]) (int, bool) { return r.Value, true }))
		b.Publish(&topic.Record[int]{Value: 3})
		if got := takeAll(ch); len(got) != 1 || got[0] != 3 {
			t.Errorf("received %v, want [3]", got)
		}
	})
	if p != nil {
		t.Errorf("Subscribe with From(func(*topic.Record[int]) ...) panicked: %v", p)
	}
}

// A nil *Record published where a handler's From(any) source takes it: the
// re-drive check asks whether the value is a dead letter, and panics on
// the publisher's goroutine.
func TestANilRecordPointerThroughAnyDoesNotPanicThePublisher(t *testing.T) {
	var b topic.Broker
	var handled atomic.Int64
	b.Handle(func(context.Context, r2A) error { handled.Add(1); return nil },
		topic.Name[r2A]("h"),
		topic.From(func(x any) (r2A, bool) { return r2A{}, true }))
	p := r2Recover(func() { b.Publish[*topic.Record[int]](nil) })
	if p != nil {
		t.Errorf("Publish of a nil *topic.Record[int] panicked: %v", p)
	}
	_ = b.Shutdown(context.Background())
	st := hStats(t, &b, "h")
	if handled.Load()+int64(st.Lost.Total()) != 1 {
		t.Errorf("handled %d, lost %+v; want one value handled or counted", handled.Load(), st.Lost)
	}
}

// An at-least-once handler of *Record[int] that fails on a nil value:
// deciding whether to dead-letter it panics on the worker, outside f, and
// the panic is not recovered: the process dies. Run in a child process.
func TestANilRecordPointerFailingItsAttemptsDoesNotKillTheProcess(t *testing.T) {
	if os.Getenv("R2_CHILD") == "1" {
		var b topic.Broker
		dl, _ := b.Subscribe(topic.Buffer[topic.DeadLetter[*topic.Record[int]]](4))
		b.Handle(func(context.Context, *topic.Record[int]) error { return errors.New("no") },
			topic.Retry[*topic.Record[int]](topic.RetryPolicy{Attempts: 1}))
		b.Publish[*topic.Record[int]](nil)
		if err := b.Shutdown(context.Background()); err != nil {
			fmt.Println("Shutdown:", err)
		}
		fmt.Println("dead letters:", len(takeAll(dl)))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestANilRecordPointerFailingItsAttemptsDoesNotKillTheProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "R2_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		lines := strings.Split(string(out), "\n")
		t.Errorf("the child process died (%v):\n%s", err, strings.Join(lines[:min(len(lines), 12)], "\n"))
	}
}

// ---------------------------------------------------------------------------
// runtime.Goexit in a handler's function.

// A handler whose function calls runtime.Goexit (t.FailNow does) on one
// value: the worker ends, the value in hand is Errored, the subscription is
// cancelled, and what it had queued is Discarded, all reported to OnLoss;
// what is published after is not for it any more.
func TestGoexitInAHandlerLosesNothingSilently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		var handled atomic.Int64
		var losses hLosses[r2A]
		queued := make(chan struct{})
		stop := b.Handle(func(_ context.Context, v r2A) error {
			if v.N == 0 {
				<-queued // the other four are queued, not published after the end
				runtime.Goexit()
			}
			handled.Add(1)
			return nil
		}, topic.Name[r2A]("h"), topic.Buffer[r2A](16), losses.hook())
		for i := range 5 {
			b.Publish(r2A{i})
		}
		close(queued)
		stop() // returns: the worker has ended
		if hListed(&b, "h") {
			t.Error("the handler is still listed after its worker ended")
		}
		b.Publish(r2A{10})
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := handled.Load(); n != 0 {
			t.Errorf("handled %d, want 0", n)
		}
		if got, want := losses.count(topic.Errored), uint64(1); got != want {
			t.Errorf("%d Errored, want the value in hand", got)
		}
		if got := losses.count(topic.Discarded); got != 4 {
			t.Errorf("%d Discarded, want the 4 queued", got)
		}
	})
}

// ---------------------------------------------------------------------------
// Parking: handlers stopping each other and calling Shutdown.

// A stops B, B stops C, C calls Shutdown: the chain unwinds.
func TestAChainOfStopsEndingInAShutdownUnwinds(t *testing.T) {
	for trial := range 20 {
		var b topic.Broker
		var stopB, stopC func()
		var handled [3]atomic.Int64
		inC := make(chan struct{})
		stopC = b.Handle(func(_ context.Context, v r2C) error {
			handled[2].Add(1)
			if v.N == 0 {
				close(inC)
				if err := b.Shutdown(context.Background()); err != nil {
					t.Errorf("Shutdown in C = %v", err)
				}
			}
			return nil
		}, topic.Name[r2C]("c"))
		inB := make(chan struct{})
		stopB = b.Handle(func(_ context.Context, v r2B) error {
			handled[1].Add(1)
			if v.N == 0 {
				<-inC
				close(inB)
				stopC()
			}
			return nil
		}, topic.Name[r2B]("b"))
		b.Handle(func(_ context.Context, v r2A) error {
			handled[0].Add(1)
			if v.N == 0 {
				<-inB
				stopB()
			}
			b.Publish(r2C{v.N + 100}) // C is stopped by then: dropped (cancelled)
			return nil
		}, topic.Name[r2A]("a"))
		for i := range 3 {
			b.Publish(r2A{i})
		}
		b.Publish(r2B{0})
		b.Publish(r2C{0}) // last: C's Shutdown closes the broker
		if trial%2 == 0 {
			select {
			case <-inB:
			case <-time.After(10 * time.Second):
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				t.Fatalf("trial %d: B never reached its stop of C: handled %d %d %d, %d goroutines of the broker, snapshot %+v\n%s",
					trial, handled[0].Load(), handled[1].Load(), handled[2].Load(), b.Goroutines(), b.Subscriptions(), buf[:n])
			}
		}
		r2Within(t, 5*time.Second, fmt.Sprintf("trial %d: outer Shutdown", trial), func() {
			if err := b.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown = %v", err)
			}
		})
		if g := b.Goroutines(); g != 0 {
			t.Errorf("trial %d: %d goroutines", trial, g)
		}
	}
}

// A handler's From function, run on another handler's worker, stops a
// third handler whose function is inside Shutdown; the From function's
// handler is stopped meanwhile from outside, while parked.
func TestAStopFromAFromFunctionOnAWorkerIsParked(t *testing.T) {
	for trial := range 20 {
		var b topic.Broker
		inC := make(chan struct{})
		stopC := b.Handle(func(_ context.Context, v r2C) error {
			close(inC)
			return b.Shutdown(context.Background())
		})
		// S's From function runs on A's worker (A publishes r2K).
		parkedA := make(chan struct{})
		b.Subscribe(topic.Buffer[r2D](4), topic.From(func(k r2K) (r2D, bool) {
			<-inC
			close(parkedA)
			stopC()
			return r2D(k), true
		}))
		stopA := b.Handle(func(_ context.Context, v r2A) error {
			b.Publish(r2K(v))
			return nil
		}, topic.Name[r2A]("a"))
		b.Publish(r2A{})
		b.Publish(r2C{}) // last: C's Shutdown closes the broker
		var wg sync.WaitGroup
		wg.Go(func() {
			<-parkedA
			stopA() // A is parked in stop(C)
		})
		r2Within(t, 5*time.Second, fmt.Sprintf("trial %d: Shutdown", trial), func() {
			if err := b.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown = %v", err)
			}
			wg.Wait()
		})
	}
}

// Two handlers whose functions call Shutdown from inside, repeatedly, while
// publishing to each other and to a third: every value reaches the end.
func TestRepeatedShutdownsFromHandlersFeedingEachOther(t *testing.T) {
	for trial := range 20 {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			const n = 40
			out, _ := b.Subscribe(topic.Buffer[r2D](4 * n))
			b.Handle(func(ctx context.Context, v r2A) error {
				if v.N%3 == trial%3 {
					_ = b.Shutdown(ctx)
				}
				time.Sleep(time.Duration(v.N%7) * time.Microsecond)
				if v.N < n {
					b.Publish(r2B{v.N + 1})
				}
				b.Publish(r2D(v))
				return nil
			}, topic.Buffer[r2A](4*n))
			b.Handle(func(ctx context.Context, v r2B) error {
				if v.N%2 == 0 {
					_ = b.Shutdown(ctx)
					_ = b.Shutdown(ctx)
				}
				if v.N < n {
					b.Publish(r2A{v.N + 1})
				}
				b.Publish(r2D(v))
				return nil
			}, topic.Buffer[r2B](4*n))
			b.Publish(r2A{0})
			if err := b.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := len(takeAll(out))
			var lost uint64
			for _, st := range b.Subscriptions() {
				lost += st.Lost.Total()
			}
			if got != n+1 || lost != 0 {
				t.Errorf("trial %d: %d values at the end, want %d; lost %d", trial, got, n+1, lost)
			}
		})
	}
}

// A handler parked in Shutdown whose context ends while another handler
// is parked in a stop of it: the drain is cut, nothing hangs.
func TestAParkedShutdownWhoseContextEndsWhileAnotherIsParkedInAStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		block := make(chan struct{})
		inB := make(chan struct{})
		stopB := b.Handle(func(_ context.Context, v r2B) error {
			close(inB)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := b.Shutdown(ctx)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Shutdown in B = %v, want deadline", err)
			}
			return nil
		}, topic.Name[r2B]("b"))
		b.Handle(func(_ context.Context, v r2A) error {
			<-inB
			stopB()
			return nil
		})
		// C never returns until block: the drain waits for it until B's
		// context ends.
		b.Handle(func(ctx context.Context, v r2C) error {
			select {
			case <-block:
			case <-ctx.Done():
			}
			return nil
		})
		b.Publish(r2C{})
		b.Publish(r2B{})
		b.Publish(r2A{})
		err := b.Shutdown(context.Background())
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("outer Shutdown = %v, want the deadline of B's", err)
		}
		close(block)
		synctest.Wait()
		if g := b.Goroutines(); g != 0 {
			t.Errorf("%d goroutines", g)
		}
	})
}

// Every Shutdown call returns the one outcome: a call whose context has
// already ended, made once the broker is sealed but before the workers have
// ended, returns its own error (and cuts the drain short), while the first
// call and every later one return nil.
func TestShutdownCallsAgreeOnTheOutcome(t *testing.T) {
	bad := 0
	for trial := range 200 {
		var b topic.Broker
		sealed, _ := b.Subscribe[r2D]()
		for range 4 {
			b.Handle(func(context.Context, r2A) error { return nil })
		}
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		var errs [3]error
		var wg sync.WaitGroup
		wg.Go(func() { errs[0] = b.Shutdown(context.Background()) })
		wg.Go(func() {
			for range sealed {
			}
			errs[1] = b.Shutdown(cancelled)
		})
		wg.Wait()
		errs[2] = b.Shutdown(context.Background())
		if errs[0] != errs[1] || errs[1] != errs[2] {
			bad++
			if bad <= 3 {
				t.Errorf("trial %d: the calls returned %v, %v, %v", trial, errs[0], errs[1], errs[2])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of 200 trials: Shutdown calls disagree on the outcome", bad)
	}
}

// ---------------------------------------------------------------------------
// The in-place routing table.

// Publishers of new dynamic types (arrays made by reflect.ArrayOf,
// published through any), of dynamic types seen before and of a known
// type, while others subscribe and cancel interface subscriptions and take
// snapshots; then Shutdown and more new types. Every publication reaches
// the persistent subscriptions or is counted there.
func TestTheTableUnderChurnLosesNoPublication(t *testing.T) {
	elems := []reflect.Type{reflect.TypeFor[byte](), reflect.TypeFor[int16](), reflect.TypeFor[uint32](), reflect.TypeFor[float64]()}
	const pubs, perPub = 4, 600
	// Types are made ahead: reflect.ArrayOf is slow and serialised.
	types := make([][]reflect.Type, pubs+1)
	for p := range types {
		for i := range perPub {
			types[p] = append(types[p], reflect.ArrayOf(1+p*perPub+i+trialBase, elems[i%len(elems)]))
		}
	}
	for trial := range 3 {
		var b topic.Broker
		anyCh, _ := b.Subscribe(topic.Name[any]("any"), topic.Buffer[any](256))
		slowCh, _ := b.Subscribe(topic.Name[any]("slow"), topic.Buffer[any](256), topic.OnLoss(func(topic.Loss[any]) {}))
		kCh, _ := b.Subscribe(topic.Name[r2K]("k"), topic.Buffer[r2K](256))
		var got [3]atomic.Int64
		var consumers sync.WaitGroup
		consumers.Go(func() {
			for range anyCh {
				got[0].Add(1)
			}
		})
		consumers.Go(func() {
			for range slowCh {
				got[1].Add(1)
			}
		})
		consumers.Go(func() {
			for range kCh {
				got[2].Add(1)
			}
		})
		var published, publishedK atomic.Int64
		stop := make(chan struct{})
		var churn sync.WaitGroup
		for i := range 3 {
			churn.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					switch i {
					case 0:
						_, c := b.Subscribe[fmt.Stringer]()
						c()
					case 1:
						_, c := b.Subscribe[any](topic.Buffer[any](0))
						_, c2 := b.Subscribe[interface{ Len() int }](topic.OnLoss(func(topic.Loss[interface{ Len() int }]) {}))
						c()
						c2()
					case 2:
						_ = b.Subscriptions()
						_, c := b.Subscribe[r2K](topic.From(func(x any) (r2K, bool) { return r2K{}, false }))
						c()
					}
				}
			})
		}
		var wg sync.WaitGroup
		for p := range pubs {
			wg.Go(func() {
				for i, typ := range types[p] {
					b.Publish[any](reflect.New(typ).Elem().Interface())
					published.Add(1)
					if i%4 == 0 { // one seen before, maybe by another publisher
						b.Publish[any](reflect.New(types[(p+1)%pubs][i/2]).Elem().Interface())
						published.Add(1)
					}
					b.Publish(r2K{i})
					publishedK.Add(1)
				}
			})
		}
		wg.Wait()
		close(stop)
		churn.Wait()
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		consumers.Wait()
		// After the seal: new types, through the in-place table, and old ones.
		for i, typ := range types[pubs] {
			b.Publish[any](reflect.New(typ).Elem().Interface())
			b.Publish[any](reflect.New(types[0][i]).Elem().Interface())
			published.Add(2)
		}
		b.Publish(r2K{})
		publishedK.Add(1)
		total := published.Load() + publishedK.Load()
		for i, c := range []struct {
			name string
			want int64
		}{{"any", total}, {"slow", total}, {"k", publishedK.Load()}} {
			st := hStats(t, &b, c.name)
			if n := got[i].Load() + int64(st.Lost.Total()); n != c.want {
				t.Errorf("trial %d: %s: published %d, received %d, lost %+v: %d unaccounted",
					trial, c.name, c.want, got[i].Load(), st.Lost, c.want-n)
			}
		}
	}
}

const trialBase = 1000

// ---------------------------------------------------------------------------
// The re-drive queue at Shutdown.

// A failing handler that re-drives its dead letters through a second queue
// (DropNewest or DropOldest), fed by outside publishers racing Shutdown,
// which may be cut short: every publication is handled or counted, and
// every loss counted is reported to OnLoss.
func TestTheRedriveQueueAccountsForEverything(t *testing.T) {
	for _, policy := range []topic.Policy{topic.DropNewest, topic.DropOldest} {
		for _, cut := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/cut=%v", policy, cut), func(t *testing.T) {
				bad := 0
				for trial := range 20 {
					var b topic.Broker
					var handled, reported atomic.Int64
					b.Handle(func(ctx context.Context, v r2A) error {
						if v.N%4 == 0 {
							time.Sleep(20 * time.Microsecond)
						}
						if v.N%2 == 1 {
							return topic.Permanent(errDeclined)
						}
						handled.Add(1)
						return nil
					}, topic.Name[r2A]("h"), topic.Buffer[r2A](4), topic.Overflow[r2A](policy),
						topic.Retry[r2A](topic.RetryPolicy{Attempts: 2}),
						topic.From(func(d topic.DeadLetter[r2A]) (r2A, bool) { return d.Value, true }),
						topic.OnLoss(func(topic.Loss[r2A]) { reported.Add(1) }))
					var published atomic.Int64
					var wg sync.WaitGroup
					for p := range 3 {
						wg.Go(func() {
							for i := range 3000 {
								b.Publish(r2A{p*100000 + i})
								published.Add(1)
							}
						})
					}
					time.Sleep(time.Duration(trial%5) * 300 * time.Microsecond)
					ctx := context.Background()
					if cut {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, time.Duration(trial%4)*100*time.Microsecond)
						defer cancel()
					}
					err := b.Shutdown(ctx)
					if !cut && err != nil {
						t.Fatal(err)
					}
					wg.Wait()
					for b.Goroutines() != 0 {
						time.Sleep(time.Millisecond)
					}
					st := hStats(t, &b, "h")
					n := handled.Load() + int64(st.Lost.Total())
					if n != published.Load() || reported.Load() != int64(st.Lost.Total()) {
						bad++
						if bad <= 3 {
							t.Errorf("trial %d: published %d, handled %d, lost %+v (%d reported), dead-lettered %d, queued %d: %d unaccounted",
								trial, published.Load(), handled.Load(), st.Lost, reported.Load(), st.Handler.DeadLettered, st.Queued, published.Load()-n)
						}
					}
				}
				if bad > 0 {
					t.Errorf("%d of 20 trials", bad)
				}
			})
		}
	}
}

// ---------------------------------------------------------------------------
// Concrete types routed while publishers of them run, without interface
// subscriptions (no resolution under the lock): each insertion in place must
// be seen by every publication that starts after Subscribe returns.

type (
	r2T0  struct{ N int }
	r2T1  struct{ N int }
	r2T2  struct{ N int }
	r2T3  struct{ N int }
	r2T4  struct{ N int }
	r2T5  struct{ N int }
	r2T6  struct{ N int }
	r2T7  struct{ N int }
	r2T8  struct{ N int }
	r2T9  struct{ N int }
	r2T10 struct{ N int }
	r2T11 struct{ N int }
	r2T12 struct{ N int }
	r2T13 struct{ N int }
	r2T14 struct{ N int }
	r2T15 struct{ N int }
	r2T16 struct{ N int }
	r2T17 struct{ N int }
	r2T18 struct{ N int }
	r2T19 struct{ N int }
	r2T20 struct{ N int }
	r2T21 struct{ N int }
	r2T22 struct{ N int }
	r2T23 struct{ N int }
	r2T24 struct{ N int }
	r2T25 struct{ N int }
	r2T26 struct{ N int }
	r2T27 struct{ N int }
	r2T28 struct{ N int }
	r2T29 struct{ N int }
	r2T30 struct{ N int }
	r2T31 struct{ N int }
	r2T32 struct{ N int }
	r2T33 struct{ N int }
	r2T34 struct{ N int }
	r2T35 struct{ N int }
	r2T36 struct{ N int }
	r2T37 struct{ N int }
	r2T38 struct{ N int }
	r2T39 struct{ N int }
	r2T40 struct{ N int }
	r2T41 struct{ N int }
	r2T42 struct{ N int }
	r2T43 struct{ N int }
	r2T44 struct{ N int }
	r2T45 struct{ N int }
	r2T46 struct{ N int }
	r2T47 struct{ N int }
	r2T48 struct{ N int }
	r2T49 struct{ N int }
	r2T50 struct{ N int }
	r2T51 struct{ N int }
	r2T52 struct{ N int }
	r2T53 struct{ N int }
	r2T54 struct{ N int }
	r2T55 struct{ N int }
	r2T56 struct{ N int }
	r2T57 struct{ N int }
	r2T58 struct{ N int }
	r2T59 struct{ N int }
	r2T60 struct{ N int }
	r2T61 struct{ N int }
	r2T62 struct{ N int }
	r2T63 struct{ N int }
)

type r2Typed struct {
	subscribe func(b *topic.Broker) (count func() int, stop func())
	publish   func(b *topic.Broker)
}

func r2TypedOf[T any](mk func() T) r2Typed {
	return r2Typed{
		subscribe: func(b *topic.Broker) (func() int, func()) {
			ch, cancel := b.Subscribe(topic.Buffer[T](1<<14), topic.Name[T]("t"))
			return func() int { return len(ch) }, cancel
		},
		publish: func(b *topic.Broker) { b.Publish(mk()) },
	}
}

var r2Types = []r2Typed{
	r2TypedOf(func() r2T0 { return r2T0{} }),
	r2TypedOf(func() r2T1 { return r2T1{} }),
	r2TypedOf(func() r2T2 { return r2T2{} }),
	r2TypedOf(func() r2T3 { return r2T3{} }),
	r2TypedOf(func() r2T4 { return r2T4{} }),
	r2TypedOf(func() r2T5 { return r2T5{} }),
	r2TypedOf(func() r2T6 { return r2T6{} }),
	r2TypedOf(func() r2T7 { return r2T7{} }),
	r2TypedOf(func() r2T8 { return r2T8{} }),
	r2TypedOf(func() r2T9 { return r2T9{} }),
	r2TypedOf(func() r2T10 { return r2T10{} }),
	r2TypedOf(func() r2T11 { return r2T11{} }),
	r2TypedOf(func() r2T12 { return r2T12{} }),
	r2TypedOf(func() r2T13 { return r2T13{} }),
	r2TypedOf(func() r2T14 { return r2T14{} }),
	r2TypedOf(func() r2T15 { return r2T15{} }),
	r2TypedOf(func() r2T16 { return r2T16{} }),
	r2TypedOf(func() r2T17 { return r2T17{} }),
	r2TypedOf(func() r2T18 { return r2T18{} }),
	r2TypedOf(func() r2T19 { return r2T19{} }),
	r2TypedOf(func() r2T20 { return r2T20{} }),
	r2TypedOf(func() r2T21 { return r2T21{} }),
	r2TypedOf(func() r2T22 { return r2T22{} }),
	r2TypedOf(func() r2T23 { return r2T23{} }),
	r2TypedOf(func() r2T24 { return r2T24{} }),
	r2TypedOf(func() r2T25 { return r2T25{} }),
	r2TypedOf(func() r2T26 { return r2T26{} }),
	r2TypedOf(func() r2T27 { return r2T27{} }),
	r2TypedOf(func() r2T28 { return r2T28{} }),
	r2TypedOf(func() r2T29 { return r2T29{} }),
	r2TypedOf(func() r2T30 { return r2T30{} }),
	r2TypedOf(func() r2T31 { return r2T31{} }),
	r2TypedOf(func() r2T32 { return r2T32{} }),
	r2TypedOf(func() r2T33 { return r2T33{} }),
	r2TypedOf(func() r2T34 { return r2T34{} }),
	r2TypedOf(func() r2T35 { return r2T35{} }),
	r2TypedOf(func() r2T36 { return r2T36{} }),
	r2TypedOf(func() r2T37 { return r2T37{} }),
	r2TypedOf(func() r2T38 { return r2T38{} }),
	r2TypedOf(func() r2T39 { return r2T39{} }),
	r2TypedOf(func() r2T40 { return r2T40{} }),
	r2TypedOf(func() r2T41 { return r2T41{} }),
	r2TypedOf(func() r2T42 { return r2T42{} }),
	r2TypedOf(func() r2T43 { return r2T43{} }),
	r2TypedOf(func() r2T44 { return r2T44{} }),
	r2TypedOf(func() r2T45 { return r2T45{} }),
	r2TypedOf(func() r2T46 { return r2T46{} }),
	r2TypedOf(func() r2T47 { return r2T47{} }),
	r2TypedOf(func() r2T48 { return r2T48{} }),
	r2TypedOf(func() r2T49 { return r2T49{} }),
	r2TypedOf(func() r2T50 { return r2T50{} }),
	r2TypedOf(func() r2T51 { return r2T51{} }),
	r2TypedOf(func() r2T52 { return r2T52{} }),
	r2TypedOf(func() r2T53 { return r2T53{} }),
	r2TypedOf(func() r2T54 { return r2T54{} }),
	r2TypedOf(func() r2T55 { return r2T55{} }),
	r2TypedOf(func() r2T56 { return r2T56{} }),
	r2TypedOf(func() r2T57 { return r2T57{} }),
	r2TypedOf(func() r2T58 { return r2T58{} }),
	r2TypedOf(func() r2T59 { return r2T59{} }),
	r2TypedOf(func() r2T60 { return r2T60{} }),
	r2TypedOf(func() r2T61 { return r2T61{} }),
	r2TypedOf(func() r2T62 { return r2T62{} }),
	r2TypedOf(func() r2T63 { return r2T63{} }),
}

func TestTableInsertionsAreSeenByLaterPublications(t *testing.T) {
	for trial := range 20 {
		var b topic.Broker
		// One subscription first, so that the table exists and grows in
		// place and by doubling while the publishers run.
		b.Subscribe[r2K]()
		var subscribed [64]atomic.Bool
		var after [64]atomic.Int64
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for p := range 3 {
			wg.Go(func() {
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					default:
					}
					i := (k*7 + p) % len(r2Types)
					was := subscribed[i].Load()
					r2Types[i].publish(&b)
					if was {
						after[i].Add(1)
					}
				}
			})
		}
		counts := make([]func() int, len(r2Types))
		for i, ty := range r2Types {
			counts[i], _ = ty.subscribe(&b)
			subscribed[i].Store(true)
			if i%8 == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
		time.Sleep(2 * time.Millisecond)
		close(stop)
		wg.Wait()
		var lost [64]uint64
		for _, st := range b.Subscriptions() {
			for i := range r2Types {
				if st.Name == "t" && st.Type.Name() == fmt.Sprintf("r2T%d", i) {
					lost[i] = st.Lost.Total()
				}
			}
		}
		for i := range r2Types {
			if got := int64(counts[i]()) + int64(lost[i]); got < after[i].Load() {
				t.Errorf("trial %d: type %d: %d published after Subscribe returned, %d received or counted",
					trial, i, after[i].Load(), got)
			}
		}
	}
}

// Two handlers stopping each other from their functions: each stop would
// wait for the other handler to end, which waits in its own stop; the
// second stop sees the cycle and returns at once, so both end.
func TestTwoHandlersStoppingEachOtherBothReturn(t *testing.T) {
	var b topic.Broker
	var stopA, stopB func()
	var ready sync.WaitGroup
	ready.Add(2)
	stopA = b.Handle(func(context.Context, r2A) error {
		ready.Done()
		ready.Wait()
		stopB()
		return nil
	})
	stopB = b.Handle(func(context.Context, r2B) error {
		ready.Done()
		ready.Wait()
		stopA()
		return nil
	})
	b.Publish(r2A{})
	b.Publish(r2B{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var err error
	if r2Within(t, 10*time.Second, "Shutdown with a 2s deadline", func() { err = b.Shutdown(ctx) }) {
		if err != nil || b.Goroutines() != 0 {
			t.Errorf("two handlers stopping each other: Shutdown = %v, %d goroutines left", err, b.Goroutines())
		}
	}
}

// A handler's OnLoss function, run on another handler's worker (which
// publishes into a full subscription), stops a third handler that is
// inside Shutdown.
func TestAStopFromAnOnLossFunctionOnAWorkerIsParked(t *testing.T) {
	for trial := range 50 {
		var b topic.Broker
		inC := make(chan struct{})
		stopC := b.Handle(func(_ context.Context, v r2C) error {
			close(inC)
			return b.Shutdown(context.Background())
		})
		b.Subscribe(topic.Buffer[r2D](0), topic.OnLoss(func(topic.Loss[r2D]) {
			<-inC
			stopC()
		}))
		b.Handle(func(_ context.Context, v r2A) error {
			b.Publish(r2D(v)) // unbuffered, no receiver: lost, OnLoss runs here
			return nil
		})
		b.Publish(r2A{})
		b.Publish(r2C{})
		r2Within(t, 5*time.Second, fmt.Sprintf("trial %d: Shutdown", trial), func() {
			if err := b.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown = %v", err)
			}
		})
	}
}

// A retained type published and appended by outside publishers racing
// Shutdown, to a handler replaying it, a channel subscription with OnLoss,
// a subscription to its records, and a From source of it: every
// publication is received, handled or counted by each.
func TestARetainedTypeRacingShutdownAccountsForEverything(t *testing.T) {
	bad := 0
	for trial := range 30 {
		var b topic.Broker
		b.Retain[r2A](topic.Retention{Count: 64})
		const pre = 40
		for i := range pre {
			b.Publish(r2A{i})
		}
		var handled atomic.Int64
		b.Handle(func(context.Context, r2A) error { handled.Add(1); return nil },
			topic.Name[r2A]("h"), topic.Buffer[r2A](8), topic.Replay[r2A](topic.Earliest()))
		ch, _ := b.Subscribe(topic.Name[r2A]("ch"), topic.Buffer[r2A](1<<15), topic.OnLoss(func(topic.Loss[r2A]) {}))
		rec, _ := b.Subscribe(topic.Name[topic.Record[r2A]]("rec"), topic.Buffer[topic.Record[r2A]](1<<15), topic.Overflow[topic.Record[r2A]](topic.DropOldest))
		from, _ := b.Subscribe(topic.Name[r2B]("from"), topic.Buffer[r2B](1<<15),
			topic.From(func(a r2A) (r2B, bool) { return r2B(a), true }))
		var published atomic.Int64
		var wg sync.WaitGroup
		for p := range 3 {
			wg.Go(func() {
				for i := range 2000 {
					if i%2 == 0 {
						b.Append(r2A{p*10000 + i})
					} else {
						b.Publish(r2A{p*10000 + i})
					}
					published.Add(1)
				}
			})
		}
		time.Sleep(time.Duration(trial%6) * 200 * time.Microsecond)
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		live := published.Load()
		check := func(name string, got, want int64) {
			st := hStats(t, &b, name)
			if got+int64(st.Lost.Total()) != want {
				bad++
				if bad <= 5 {
					t.Errorf("trial %d: %s: want %d, got %d, lost %+v: %d unaccounted", trial, name, want, got, st.Lost, want-got-int64(st.Lost.Total()))
				}
			}
		}
		check("h", handled.Load(), live+pre)
		check("ch", int64(len(takeAll(ch))), live)
		check("rec", int64(len(takeAll(rec))), live)
		check("from", int64(len(takeAll(from))), live)
	}
	if bad > 0 {
		t.Errorf("%d unaccounted", bad)
	}
}

// The simplest case of the above: a publication of a retained type after
// Shutdown would have reached a subscription to its records, closed by
// Shutdown; it must be counted there as Closed and reported.
func TestARecordSubscriptionCountsPublicationsAfterShutdown(t *testing.T) {
	var b topic.Broker
	b.Retain[r2A](topic.Retention{Count: 8})
	var reported atomic.Int64
	rec, _ := b.Subscribe(topic.Name[topic.Record[r2A]]("rec"), topic.Buffer[topic.Record[r2A]](8),
		topic.OnLoss(func(topic.Loss[topic.Record[r2A]]) { reported.Add(1) }))
	b.Publish(r2A{1})
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.Publish(r2A{2})
	b.Append(r2A{3})
	got := len(takeAll(rec))
	st := hStats(t, &b, "rec")
	if got != 1 || st.Lost.Closed != 2 || reported.Load() != 2 {
		t.Errorf("3 published, the last 2 after Shutdown: received %d, lost %+v, %d reported; want 1 received, 2 Closed and reported",
			got, st.Lost, reported.Load())
	}
}
