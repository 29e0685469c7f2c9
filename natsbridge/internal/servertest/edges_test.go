package servertest_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

// The regression tests of the bridge's edges: a server gone, a user From
// filter, a closed connection, a broker shut down, a codec that panics, and
// the broker's own table.

// within runs f and fails the test if it has not returned after d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s has not returned after %v", what, d)
	}
}

// Stopping a stream import while the server is unreachable returns, for
// durable and ordered consumers alike, and so does Close.
func TestStreamImportStopsWhileTheServerIsDown(t *testing.T) {
	for _, durable := range []string{"", "d"} {
		t.Run("durable="+durable, func(t *testing.T) {
			ts := startServer(t)
			n := newNode(t, ts)
			ctx := context.Background()
			imp := linked(t)(n.br.ImportStream[Order](ctx, "edge.down", natsbridge.Stream{}, natsbridge.Consumer{Durable: durable}))
			linked(t)(n.br.ImportStream[Order](ctx, "edge.down2", natsbridge.Stream{}, natsbridge.Consumer{Durable: durable}))
			ts.stop()
			waitFor(t, wait, "the disconnect", func() bool { return !n.nc.IsConnected() })
			// Within AckTimeout (2s here), with room for a slow machine.
			within(t, wait, "Link.Stop", imp.Stop)
			within(t, wait, "Bridge.Close", n.br.Close)
		})
	}
}

// A From source of the user's on an export of any does not let imported
// values out again: the bridge's skip decides first.
func TestExportOfAnyWithAUserFilterSkipsImports(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	passAll := topic.From(func(v any) (any, bool) { return v, true })
	linked(t)(n.br.Export[any]("edge.any", natsbridge.HandlerOptions(passAll)))
	linked(t)(n.br.Import[Order]("edge.orders"))
	out := connect(t, ts)
	sent, err := out.SubscribeSync("edge.any")
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Flush(); err != nil {
		t.Fatal(err)
	}
	in, cancel := n.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](1))
	defer cancel()
	if err := out.Publish("edge.orders", []byte(`{"id":1}`)); err != nil {
		t.Fatal(err)
	}
	recv(t, in, wait)         // imported
	n.b.Publish(Order{ID: 2}) // local: exported
	m, err := sent.NextMsg(wait)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.Data), `"id":2`) {
		t.Fatalf("exported %s first, want the local order", m.Data)
	}
	if m, err := sent.NextMsg(200 * time.Millisecond); err == nil {
		t.Fatalf("exported %s too: an imported value went out again", m.Data)
	}
}

// On a closed connection a synchronous stream export does not retry: each
// value becomes a dead letter at once, and Close returns.
func TestSyncStreamExportOnAClosedConnectionDoesNotRetry(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	dead, cancel := n.b.Subscribe(topic.Buffer[topic.DeadLetter[Order]](8))
	defer cancel()
	linked(t)(n.br.ExportStream[Order](context.Background(), "edge.closed", natsbridge.Stream{}))
	n.nc.Close()
	for i := range 3 {
		n.b.Publish(Order{ID: i})
	}
	for range 3 {
		d := recv(t, dead, wait)
		if d.Attempts != 1 || !errors.Is(d.Err, nats.ErrConnectionClosed) {
			t.Fatalf("dead letter after %d attempts: %v", d.Attempts, d.Err)
		}
	}
	within(t, wait, "Bridge.Close", n.br.Close)
	for _, st := range n.b.Subscriptions() {
		if h := st.Handler; h != nil && h.Retried != 0 {
			t.Errorf("%s retried %d times on a closed connection", st.Name, h.Retried)
		}
	}
}

// Export and Import right after the broker's Shutdown return ErrClosed,
// every time.
func TestLinksAfterShutdownAreRefused(t *testing.T) {
	ts := startServer(t)
	nc := connect(t, ts)
	for i := range 100 {
		var b topic.Broker
		br := natsbridge.New(&b, nc, natsbridge.Config{})
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := br.Export[Order]("edge.shut"); !errors.Is(err, natsbridge.ErrClosed) {
			t.Fatalf("try %d: Export after Shutdown: %v, want ErrClosed", i, err)
		}
		if _, err := br.Import[Order]("edge.shut"); !errors.Is(err, natsbridge.ErrClosed) {
			t.Fatalf("try %d: Import after Shutdown: %v, want ErrClosed", i, err)
		}
		br.Close()
	}
}

// panicCodec decodes nothing: it panics on every message.
type panicCodec struct{ natsbridge.JSON[Order] }

func (panicCodec) Unmarshal([]byte) (Order, error) { panic("malformed beyond words") }

// A codec that panics on a message costs that message, counted and
// reported as a decode error (terminated, on a durable stream import), not
// the process.
func TestACodecThatPanicsIsADecodeError(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	ctx := context.Background()
	core := linked(t)(n.br.Import[Order]("edge.panic", natsbridge.WithCodec[Order](panicCodec{})))
	stream := linked(t)(n.br.ImportStream[Order](ctx, "edge.spanic", natsbridge.Stream{}, natsbridge.Consumer{Durable: "p"}, natsbridge.WithCodec[Order](panicCodec{})))
	out := connect(t, ts)
	if err := out.Publish("edge.panic", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := out.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := out.Publish("edge.spanic", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, wait, "two decode errors", func() bool {
		return core.Stats().DecodeErrors == 1 && stream.Stats().DecodeErrors == 1
	})
	if e := n.errors.first(natsbridge.Decode); e == nil || !strings.Contains(e.Error(), "malformed beyond words") {
		t.Errorf("decode error reported: %v", e)
	}
}

// A bridge adds no subscription of its own to the broker's table.
func TestABridgeAddsNothingToSubscriptions(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	if st := n.b.Subscriptions(); len(st) != 0 {
		t.Fatalf("a new bridge's broker lists %+v", st)
	}
	linked(t)(n.br.Export[Order]("edge.table"))
	if st := n.b.Subscriptions(); len(st) != 1 || !strings.HasPrefix(st[0].Name, "natsbridge export") {
		t.Fatalf("with one export the broker lists %+v", st)
	}
}

// Every attempt at one value of a synchronous stream export carries the
// same message ID, and the next value another: here no stream stores the
// subject any more, so every attempt goes unanswered, seen by a plain
// subscriber.
func TestStreamExportRetriesKeepTheirMessageID(t *testing.T) {
	ts := startServer(t)
	n := &node{b: new(topic.Broker), nc: connect(t, ts)}
	n.br = natsbridge.New(n.b, n.nc, natsbridge.Config{AckTimeout: 50 * time.Millisecond})
	t.Cleanup(n.br.Close)
	ctx := context.Background()
	retry := topic.Retry[Order](topic.RetryPolicy{Attempts: 3, Base: time.Millisecond})
	linked(t)(n.br.ExportStream[Order](ctx, "edge.ids", natsbridge.Stream{}, natsbridge.HandlerOptions(retry)))
	js, err := jetstream.New(n.nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, "edge_ids"); err != nil {
		t.Fatal(err)
	}
	raw := connect(t, ts)
	sub, err := raw.SubscribeSync("edge.ids")
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Flush(); err != nil {
		t.Fatal(err)
	}
	n.b.Publish(Order{ID: 1})
	n.b.Publish(Order{ID: 2})
	var ids []string
	for range 6 {
		m, err := sub.NextMsg(wait)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.Header.Get(jetstream.MsgIDHeader))
	}
	o := n.br.Origin()
	want := []string{o + "-1", o + "-1", o + "-1", o + "-2", o + "-2", o + "-2"}
	if !slices.Equal(ids, want) {
		t.Fatalf("message IDs %v, want %v", ids, want)
	}
}

// A value whose message ID the stream stored already (an attempt whose
// acknowledgement was lost) is not stored again, and is counted as a
// duplicate and as sent.
func TestStreamExportOfAStoredIDIsStoredOnce(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	ctx := context.Background()
	exp := linked(t)(n.br.ExportStream[Order](ctx, "edge.dup", natsbridge.Stream{}))
	js, err := jetstream.New(connect(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	// What the export's first attempt at its first value would have
	// stored: its ID is the bridge's Origin and the value's number.
	if _, err := js.Publish(ctx, "edge.dup", []byte(`{"id":1}`), jetstream.WithMsgID(n.br.Origin()+"-1")); err != nil {
		t.Fatal(err)
	}
	n.b.Publish(Order{ID: 1})
	waitFor(t, wait, "the export's acknowledgement", func() bool { return exp.Stats().Sent == 1 })
	if s := exp.Stats(); s.Duplicates != 1 {
		t.Errorf("stats %+v, want one duplicate", s)
	}
	info, err := streamOf(t, n.nc, "edge.dup").Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("the stream holds %d messages, want 1", info.State.Msgs)
	}
}
