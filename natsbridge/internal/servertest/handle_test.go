package servertest_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

// fastRedelivery retries quickly, for the tests.
var fastRedelivery = topic.RetryPolicy{Attempts: 3, Base: 20 * time.Millisecond, Max: 50 * time.Millisecond}

// calls records a stream handler's calls.
type calls struct {
	mu  sync.Mutex
	got []natsbridge.Imported[Order]
}

func (c *calls) add(r natsbridge.Imported[Order]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, r)
}

func (c *calls) list() []natsbridge.Imported[Order] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]natsbridge.Imported[Order](nil), c.got...)
}

// byID counts the calls of each order ID.
func (c *calls) byID() map[int]int {
	m := map[int]int{}
	for _, r := range c.list() {
		m[r.Value.ID]++
	}
	return m
}

// produce stores orders first..first+n-1 in the stream of subject, through
// plain JetStream.
func produce(t *testing.T, ts *testServer, subject string, first, n int) {
	t.Helper()
	js, err := jetstream.New(connect(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	for i := first; i < first+n; i++ {
		if _, err := js.Publish(t.Context(), subject, []byte(`{"id":`+strconv.Itoa(i)+`}`)); err != nil {
			t.Fatal(err)
		}
	}
}

// A message is acknowledged only once the function returned nil: an error
// has it delivered again, after the back-off, until it succeeds.
func TestHandleStreamRedeliversUntilTheFunctionSucceeds(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	var c calls
	failed := map[int]bool{}
	var mu sync.Mutex
	link := linked(t)(n.br.HandleStream[Order](t.Context(), "hs.retry", natsbridge.Stream{}, natsbridge.Consumer{Durable: "w"},
		func(_ context.Context, r natsbridge.Imported[Order]) error {
			c.add(r)
			mu.Lock()
			defer mu.Unlock()
			if r.Value.ID%2 == 1 && !failed[r.Value.ID] {
				failed[r.Value.ID] = true
				return errors.New("not yet")
			}
			return nil
		}, natsbridge.Redeliver[Order](fastRedelivery)))
	produce(t, ts, "hs.retry", 0, 10)
	waitFor(t, wait, "ten handled", func() bool { return link.Stats().Handled == 10 })
	if s := link.Stats(); s.Retried != 5 || s.DeadLettered != 0 {
		t.Errorf("stats %+v, want 5 retried, none dead-lettered", s)
	}
	for _, r := range c.list() {
		if want := uint64(1); r.Value.ID%2 == 0 && r.Delivered != want {
			t.Errorf("order %d delivered %d times", r.Value.ID, r.Delivered)
		}
	}
	for id, k := range c.byID() {
		if want := 1 + id%2; k != want {
			t.Errorf("order %d handled %d times, want %d", id, k, want)
		}
	}
}

// A permanent error dead-letters at once, on the broker and on NATS, with
// the headers that say why; the last failed attempt dead-letters too; a
// dead-lettered message is never delivered again.
func TestHandleStreamDeadLetters(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	dead, cancel := n.b.Subscribe(topic.Buffer[topic.DeadLetter[Order]](4))
	defer cancel()
	raw := connect(t, ts)
	dl, err := raw.SubscribeSync(natsbridge.DeadLetterSubject("d"))
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Flush(); err != nil {
		t.Fatal(err)
	}
	var c calls
	errDeclined := errors.New("card declined")
	link := linked(t)(n.br.HandleStream[Order](t.Context(), "hs.dead", natsbridge.Stream{}, natsbridge.Consumer{Durable: "d"},
		func(_ context.Context, r natsbridge.Imported[Order]) error {
			c.add(r)
			if r.Value.ID == 1 {
				return topic.Permanent(errDeclined)
			}
			return errors.New("flaky")
		}, natsbridge.Redeliver[Order](fastRedelivery)))
	produce(t, ts, "hs.dead", 1, 2)
	for range 2 {
		d := recv(t, dead, wait)
		want := map[int]int{1: 1, 2: 3}[d.Value.ID]
		if d.Attempts != want || d.Handler != "natsbridge stream handler d" {
			t.Errorf("dead letter of %d: %d attempts by %q, want %d", d.Value.ID, d.Attempts, d.Handler, want)
		}
		if d.Value.ID == 1 && !errors.Is(d.Err, errDeclined) {
			t.Errorf("dead letter of 1: %v", d.Err)
		}
		m, err := dl.NextMsg(wait)
		if err != nil {
			t.Fatal(err)
		}
		if m.Header.Get(natsbridge.DeadLetterAttemptsHeader) != strconv.Itoa(want) ||
			m.Header.Get(natsbridge.DeadLetterSubjectHeader) != "hs.dead" ||
			m.Header.Get(natsbridge.DeadLetterErrorHeader) == "" {
			t.Errorf("dead letter on NATS: %s %v", m.Data, m.Header)
		}
	}
	time.Sleep(200 * time.Millisecond) // beyond every back-off: nothing comes back
	if got := c.byID(); got[1] != 1 || got[2] != 3 {
		t.Errorf("calls by order %v, want 1: 1, 2: 3", got)
	}
	if s := link.Stats(); s.DeadLettered != 2 || s.Retried != 2 || s.Handled != 0 {
		t.Errorf("stats %+v", s)
	}
}

// Dead letters go through JetStream, acknowledged, when a stream stores
// their subject; a message that cannot be decoded is one of them.
func TestHandleStreamStoresDeadLettersInAStream(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	js, err := jetstream.New(connect(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	dls, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.orders"}, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	link := linked(t)(n.br.HandleStream[Order](t.Context(), "hs.dlq", natsbridge.Stream{}, natsbridge.Consumer{Durable: "q"},
		func(context.Context, natsbridge.Imported[Order]) error { return nil },
		natsbridge.DeadLetterTo[Order]("dlq.orders")))
	if _, err := js.Publish(t.Context(), "hs.dlq", []byte(`not json`)); err != nil {
		t.Fatal(err)
	}
	produce(t, ts, "hs.dlq", 7, 1)
	waitFor(t, wait, "the decode error and the good one", func() bool {
		s := link.Stats()
		return s.DecodeErrors == 1 && s.Handled == 1
	})
	m, err := dls.GetMsg(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "not json" || m.Header.Get(natsbridge.DeadLetterSequenceHeader) != "1" {
		t.Errorf("stored dead letter %q %v", m.Data, m.Header)
	}
}

// A poison message near the server's max_payload: its dead letter, data
// and headers, is more than the server takes. The dead letter carries the
// start of the data and a header with its size, and the message is
// terminated, decoded once.
func TestHandleStreamTruncatesADeadLetterOverMaxPayload(t *testing.T) {
	const maxPayload = 1024
	ts := startServer(t, func(o *server.Options) { o.MaxPayload = maxPayload })
	n := newNode(t, ts)
	raw := connect(t, ts)
	dl, err := raw.SubscribeSync(natsbridge.DeadLetterSubject("big"))
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Flush(); err != nil {
		t.Fatal(err)
	}
	link := linked(t)(n.br.HandleStream[Order](t.Context(), "hs.big", natsbridge.Stream{}, natsbridge.Consumer{Durable: "big"},
		func(context.Context, natsbridge.Imported[Order]) error { return nil },
		natsbridge.Redeliver[Order](fastRedelivery)))
	js, err := jetstream.New(connect(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	poison := bytes.Repeat([]byte("x"), maxPayload-100)
	if _, err := js.Publish(t.Context(), "hs.big", poison); err != nil {
		t.Fatal(err)
	}
	m, err := dl.NextMsg(wait)
	if err != nil {
		t.Fatalf("no dead letter: %v (stats %+v)", err, link.Stats())
	}
	if got := m.Header.Get(natsbridge.DeadLetterTruncatedHeader); got != strconv.Itoa(len(poison)) ||
		len(m.Data) == 0 || !bytes.HasPrefix(poison, m.Data) || len(m.Data) >= len(poison) {
		t.Errorf("dead letter of %d bytes, truncated header %q; want the start of the data and %d", len(m.Data), got, len(poison))
	}
	time.Sleep(200 * time.Millisecond) // beyond every back-off: nothing comes back
	if s := link.Stats(); s.DecodeErrors != 1 || s.Abandoned != 0 {
		t.Errorf("stats %+v; want one decode error, nothing abandoned", s)
	}
}

// A dead letter that NATS refuses every time (the stream that stores its
// subject takes no message that large): the message is tried again until
// its last attempt, then terminated all the same and counted Abandoned,
// never looping.
func TestHandleStreamAbandonsAMessageWhoseDeadLetterIsAlwaysRefused(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	js, err := jetstream.New(connect(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "SMALLDLQ", Subjects: []string{"dlq.small"},
		Storage: jetstream.MemoryStorage, MaxMsgSize: 16}); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	link := linked(t)(n.br.HandleStream[Order](t.Context(), "hs.refused", natsbridge.Stream{}, natsbridge.Consumer{Durable: "refused"},
		func(context.Context, natsbridge.Imported[Order]) error {
			calls.Add(1)
			return topic.Permanent(errors.New("declined"))
		},
		natsbridge.DeadLetterTo[Order]("dlq.small"), natsbridge.Redeliver[Order](fastRedelivery)))
	produce(t, ts, "hs.refused", 1, 1)
	waitFor(t, wait, "the message abandoned", func() bool { return link.Stats().Abandoned == 1 })
	time.Sleep(200 * time.Millisecond) // beyond every back-off: nothing comes back
	s := link.Stats()
	if got := calls.Load(); got != int64(fastRedelivery.Attempts) || s.DeadLettered != 0 || s.Abandoned != 1 || s.PublishErrors != uint64(fastRedelivery.Attempts) {
		t.Errorf("%d calls, stats %+v; want %d calls, 1 abandoned, none dead-lettered, a publish error per attempt", got, s, fastRedelivery.Attempts)
	}
}

// A call longer than the consumer's AckWait keeps its message: it is not
// delivered again while the function runs.
func TestHandleStreamKeepsALongCallsMessage(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	var c calls
	link := linked(t)(n.br.HandleStream[Order](t.Context(), "hs.long", natsbridge.Stream{}, natsbridge.Consumer{Durable: "l", AckWait: 300 * time.Millisecond},
		func(_ context.Context, r natsbridge.Imported[Order]) error {
			c.add(r)
			if r.Value.ID == 0 {
				time.Sleep(1500 * time.Millisecond) // five AckWaits
			}
			return nil
		}))
	produce(t, ts, "hs.long", 0, 2)
	deadline := time.Now().Add(3 * wait)
	for link.Stats().Handled < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s := link.Stats(); s.Handled < 2 {
		t.Fatalf("stats %+v, calls %v, errors %v", s, c.byID(), n.errors.errs)
	}
	time.Sleep(600 * time.Millisecond) // two AckWaits: a redelivery would show
	if got := c.byID(); got[0] != 1 || got[1] != 1 {
		t.Errorf("calls by order %v, want each once", got)
	}
}

// Stop cancels the call in flight: its message, and those the link held,
// go to the next consumer of the durable name, which resumes after what was
// acknowledged: every value handled, at least once.
func TestHandleStreamStopHandsOverAndResumes(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	var c calls
	first := linked(t)(n.br.HandleStream[Order](t.Context(), "hs.stop", natsbridge.Stream{}, natsbridge.Consumer{Durable: "s"},
		func(ctx context.Context, r natsbridge.Imported[Order]) error {
			if r.Value.ID == 50 {
				<-ctx.Done() // held until Stop
				return ctx.Err()
			}
			c.add(r)
			return nil
		}))
	produce(t, ts, "hs.stop", 0, 100)
	waitFor(t, wait, "the first 50", func() bool { return first.Stats().Handled == 50 })
	within(t, wait, "Stop", first.Stop)
	second := linked(t)(n.br.HandleStream[Order](t.Context(), "hs.stop", natsbridge.Stream{}, natsbridge.Consumer{Durable: "s"},
		func(_ context.Context, r natsbridge.Imported[Order]) error {
			c.add(r)
			return nil
		}))
	waitFor(t, wait, "the other 50", func() bool { return second.Stats().Handled == 50 })
	got := c.byID()
	for id := range 100 {
		if got[id] != 1 {
			t.Errorf("order %d handled %d times", id, got[id])
		}
	}
}

// Misuse: no durable name is an error; a nil function, a bad policy, and
// the options of HandleStream given elsewhere panic.
func TestHandleStreamMisuse(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	f := func(context.Context, natsbridge.Imported[Order]) error { return nil }
	if _, err := n.br.HandleStream[Order](t.Context(), "hs.x", natsbridge.Stream{}, natsbridge.Consumer{}, f); err == nil {
		t.Error("HandleStream without a durable name: no error")
	}
	for name, call := range map[string]func(){
		"nil function": func() {
			n.br.HandleStream[Order](t.Context(), "hs.x", natsbridge.Stream{}, natsbridge.Consumer{Durable: "x"}, nil)
		},
		"no attempts":            func() { natsbridge.Redeliver[Order](topic.RetryPolicy{}) },
		"Redeliver on Export":    func() { n.br.Export[Order]("hs.y", natsbridge.Redeliver[Order](fastRedelivery)) },
		"DeadLetterTo on Import": func() { n.br.Import[Order]("hs.y", natsbridge.DeadLetterTo[Order]("a")) },
		"HandlerOptions": func() {
			n.br.HandleStream[Order](t.Context(), "hs.x", natsbridge.Stream{}, natsbridge.Consumer{Durable: "x"}, f, natsbridge.HandlerOptions[Order]())
		},
	} {
		func() {
			defer func() {
				if p := recover(); p == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			call()
		}()
	}
	if _, err := n.br.HandleStream[Order](t.Context(), "hs.x", natsbridge.Stream{}, natsbridge.Consumer{Durable: "x"}, f, natsbridge.DeadLetterTo[Order]("a.*")); !errors.Is(err, natsbridge.ErrSubject) {
		t.Errorf("a wildcard dead-letter subject: %v", err)
	}
	n.br.Close()
	if _, err := n.br.HandleStream[Order](t.Context(), "hs.x", natsbridge.Stream{}, natsbridge.Consumer{Durable: "x"}, f); !errors.Is(err, natsbridge.ErrClosed) {
		t.Errorf("HandleStream on a closed bridge: %v", err)
	}
}

var _ = nats.ErrConnectionClosed
