package servertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

const wait = 5 * time.Second // the bound of every wait for something that should happen

type Order struct {
	ID    int      `json:"id"`
	Items []string `json:"items"`
}

type Celsius float64

type Pair[K comparable, V any] struct {
	Key K
	Val V
}

// roundTrip exports T from one node and imports it on another, publishes
// vs on the first and checks that the second receives them, as Imported values and,
// through Unwrap, as plain values.
func roundTrip[T any](t *testing.T, ts *testServer, subject string, vs []T, opts ...natsbridge.Option[T]) {
	t.Helper()
	from, to := newNode(t, ts), newNode(t, ts)
	recs, cancel := to.b.Subscribe(topic.Buffer[natsbridge.Imported[T]](len(vs)))
	defer cancel()
	plain, cancelPlain := to.b.Subscribe(topic.Buffer[T](len(vs)), topic.From(natsbridge.Unwrap[T]))
	defer cancelPlain()
	linked(t)(from.br.Export[T](subject, opts...))
	imp := linked(t)(to.br.Import[T](subject, opts...))
	for _, v := range vs {
		from.b.Publish(v)
	}
	for _, want := range vs {
		r := recv(t, recs, wait)
		if !reflect.DeepEqual(r.Value, want) || r.Subject != imp.Subject() {
			t.Fatalf("got %+v, want %+v on %s", r, want, imp.Subject())
		}
		if got := recv(t, plain, wait); !reflect.DeepEqual(got, want) {
			t.Fatalf("unwrapped %+v, want %+v", got, want)
		}
	}
	if s := imp.Stats(); s.Received != uint64(len(vs)) || s.DecodeErrors != 0 {
		t.Fatalf("import stats %+v", s)
	}
}

func TestRoundTripOfSeveralTypes(t *testing.T) {
	ts := startServer(t)
	t.Run("struct", func(t *testing.T) {
		roundTrip(t, ts, "shop.orders", []Order{{1, []string{"tea"}}, {2, nil}, {3, []string{"a", "b"}}})
	})
	t.Run("named float", func(t *testing.T) {
		roundTrip(t, ts, "", []Celsius{-40, 0, 36.6})
	})
	t.Run("generic", func(t *testing.T) {
		roundTrip(t, ts, "pairs", []Pair[string, int]{{"a", 1}, {"b", 2}})
	})
	t.Run("string", func(t *testing.T) {
		roundTrip(t, ts, "words", []string{"hello", "", "wörld"})
	})
	t.Run("interface field with a custom codec", func(t *testing.T) {
		roundTrip(t, ts, "drawings",
			[]Drawn{{"ann", Circle{1}}, {"bob", Rect{2, 3}}},
			natsbridge.WithCodec[Drawn](drawnCodec{}))
	})
}

func TestJSONCannotDecodeAnInterfaceField(t *testing.T) {
	data, err := natsbridge.JSON[Drawn]{}.Marshal(Drawn{"ann", Circle{1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (natsbridge.JSON[Drawn]{}).Unmarshal(data); err == nil {
		t.Fatal("JSON decoded into an interface field: the custom codec test proves nothing")
	}
}

func TestDefaultSubjectIsDerivedFromTheType(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{natsbridge.DefaultSubject[Order](), "topic.github_com.seedaa7df82c.topic.natsbridge.internal.servertest_test.Order"},
		{natsbridge.DefaultSubject[Pair[int, bool]](), "topic.github_com.seedaa7df82c.topic.natsbridge.internal.servertest_test.Pair_int_bool_"},
		{natsbridge.DefaultSubject[time.Duration](), "topic.time.Duration"},
		{natsbridge.DefaultSubject[Shape](), "topic.github_com.seedaa7df82c.topic.natsbridge.internal.servertest_test.Shape"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("DefaultSubject of an unnamed type did not panic")
		}
	}()
	natsbridge.DefaultSubject[[]int]()
}

func TestInvalidSubjectsAreRefused(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	for _, c := range []struct {
		subject         string
		export, import_ bool // refused by
	}{
		{"a..b", true, true},
		{".a", true, true},
		{"a.", true, true},
		{"a b", true, true},
		{"a\tb", true, true},
		{"w.*", true, false},
		{"*", true, false},
		{"a.>", true, false},
		{"a.>.b", true, true},
		{"a.b", false, false},
		{"a*b.c>", false, false}, // literal tokens
	} {
		_, err := n.br.Export[Order](c.subject)
		if refused := errors.Is(err, natsbridge.ErrSubject); refused != c.export {
			t.Errorf("Export(%q): %v", c.subject, err)
		}
		_, err = n.br.Import[Order](c.subject)
		if refused := errors.Is(err, natsbridge.ErrSubject); refused != c.import_ {
			t.Errorf("Import(%q): %v", c.subject, err)
		}
		_, err = n.br.ExportStream[Order](t.Context(), c.subject, natsbridge.Stream{Memory: true})
		if refused := errors.Is(err, natsbridge.ErrSubject); c.export && !refused {
			t.Errorf("ExportStream(%q): %v", c.subject, err)
		}
	}
	if _, err := n.br.Export[[]int](""); !errors.Is(err, natsbridge.ErrSubject) {
		t.Errorf("Export of an unnamed type with no subject: %v", err)
	}
}

func TestImportWithWildcardReceivesEverySubject(t *testing.T) {
	ts := startServer(t)
	from, to := newNode(t, ts), newNode(t, ts)
	recs, cancel := to.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](4))
	defer cancel()
	linked(t)(to.br.Import[Order]("orders.>"))
	linked(t)(from.br.Export[Order]("orders.eu.fr"))
	from.b.Publish(Order{ID: 7})
	if r := recv(t, recs, wait); r.Subject != "orders.eu.fr" || r.Value.ID != 7 {
		t.Fatalf("got %+v", r)
	}
}

func TestProcessDoesNotReceiveItsOwnExports(t *testing.T) {
	ts := startServer(t)
	for _, c := range []struct {
		name string
		opts []nats.Option
	}{
		{"no echo", nil},
		{"echo, origin header", []nats.Option{func(o *nats.Options) error { o.NoEcho = false; return nil }}},
	} {
		t.Run(c.name, func(t *testing.T) {
			self, peer := newNode(t, ts, c.opts...), newNode(t, ts, c.opts...)
			const subject = "loop.core"
			// Both export and import the same subject.
			for _, n := range []*node{self, peer} {
				linked(t)(n.br.Export[Order](subject))
				linked(t)(n.br.Import[Order](subject))
			}
			selfIn, cancel := self.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](16))
			defer cancel()
			peerIn, cancelPeer := peer.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](16))
			defer cancelPeer()

			self.b.Publish(Order{ID: 1})
			peer.b.Publish(Order{ID: 2})

			if r := recv(t, selfIn, wait); r.Value.ID != 2 {
				t.Fatalf("self received %+v, its own", r.Value)
			}
			if r := recv(t, peerIn, wait); r.Value.ID != 1 {
				t.Fatalf("peer received %+v, its own", r.Value)
			}
			// Nothing comes back: not one's own, and no import is
			// exported again (that would ping-pong forever).
			none(t, selfIn, 100*time.Millisecond)
			none(t, peerIn, 0)
			for _, n := range []*node{self, peer} {
				s := n.br.Stats()
				if s.Sent != 1 || s.Received != 1 {
					t.Errorf("stats %+v", s)
				}
				if c.opts != nil && s.Echoes != 1 {
					t.Errorf("echo connection: %d echoes, want 1", s.Echoes)
				}
			}
		})
	}
}

func TestMalformedMessageIsCountedAndSkipped(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	recs, cancel := n.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](4))
	defer cancel()
	imp := linked(t)(n.br.Import[Order]("malformed"))
	raw := connect(t, ts)
	for _, data := range []string{`{"id":`, `{"id":1}`, `[1,2]`, `{"id":2}`} {
		if err := raw.Publish("malformed", []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []int{1, 2} {
		if r := recv(t, recs, wait); r.Value.ID != want {
			t.Fatalf("got %+v, want id %d", r.Value, want)
		}
	}
	s := imp.Stats()
	if s.DecodeErrors != 2 || s.Received != 2 {
		t.Fatalf("stats %+v", s)
	}
	e := n.errors.first(natsbridge.Decode)
	if n.errors.count(natsbridge.Decode) != 2 || e.Subject != "malformed" {
		t.Fatalf("reported %v", e)
	}
	var syntax *json.SyntaxError
	if !errors.As(e, &syntax) {
		t.Fatalf("%v does not wrap the codec's error", e)
	}
}

func TestEncodeFailureIsALossOfTheBroker(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	var losses atomic.Int64
	var lossErr atomic.Pointer[natsbridge.Error]
	exp := linked(t)(n.br.Export[Drawn]("drawings.bad",
		natsbridge.WithCodec[Drawn](drawnCodec{}),
		natsbridge.HandlerOptions(topic.OnLoss(func(l topic.Loss[Drawn]) {
			var e *natsbridge.Error
			if errors.As(l.Err, &e) {
				lossErr.Store(e)
			}
			losses.Add(1)
		}))))
	n.b.Publish(Drawn{"ann", nil}) // no shape: drawnCodec refuses it
	n.b.Publish(Drawn{"bob", Circle{1}})
	waitFor(t, wait, "two values handled", func() bool { s := exp.Stats(); return s.Sent+s.EncodeErrors == 2 })
	if s := exp.Stats(); s.EncodeErrors != 1 || s.Sent != 1 {
		t.Fatalf("stats %+v", s)
	}
	waitFor(t, wait, "the loss reported", func() bool { return losses.Load() == 1 })
	if e := lossErr.Load(); e == nil || e.Op != natsbridge.Encode {
		t.Fatalf("topic.Loss.Err = %v", e)
	}
	var found bool
	for _, s := range n.b.Subscriptions() {
		if s.Name == "natsbridge export drawings.bad" {
			found = true
			if s.Lost.Errored != 1 {
				t.Errorf("broker counted %+v", s.Lost)
			}
		}
	}
	if !found {
		t.Error("the export is not a subscription of the broker")
	}
	if n.errors.count(natsbridge.Encode) != 1 {
		t.Error("encode failure not reported")
	}
}

func TestPublishFailureIsCountedAndReported(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	exp := linked(t)(n.br.Export[Order]("closed"))
	n.nc.Close()
	n.b.Publish(Order{ID: 1})
	waitFor(t, wait, "the publish failure", func() bool { return exp.Stats().PublishErrors == 1 })
	if e := n.errors.first(natsbridge.Publish); e == nil || !errors.Is(e, nats.ErrConnectionClosed) {
		t.Fatalf("reported %v", e)
	}
}

func TestSlowImportDropsAreCounted(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	imp := linked(t)(n.br.Import[Order]("slow",
		natsbridge.Pending[Order](4),
		natsbridge.WithCodec[Order](slowCodec{})))
	raw := connect(t, ts)
	const sent = 200
	for i := range sent {
		if err := raw.Publish("slow", fmt.Appendf(nil, `{"id":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := raw.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, wait, "every message received or dropped", func() bool {
		s := imp.Stats()
		return s.Received+s.Dropped == sent
	})
	s := imp.Stats()
	if s.Dropped == 0 || s.SlowConsumers == 0 {
		t.Fatalf("stats %+v: nothing dropped", s)
	}
	if n.errors.count(natsbridge.SlowConsumer) == 0 {
		t.Fatal("slow consumer not reported")
	}
	imp.Stop()
	if bs := n.br.Stats(); bs.Received+bs.Dropped != sent {
		t.Fatalf("after Stop the bridge counts %+v", bs)
	}
}

// slowCodec decodes JSON slowly, so that an import falls behind.
type slowCodec struct{ natsbridge.JSON[Order] }

func (c slowCodec) Unmarshal(data []byte) (Order, error) {
	time.Sleep(200 * time.Microsecond)
	return c.JSON.Unmarshal(data)
}

func TestStopIsIdempotentAndWaits(t *testing.T) {
	ts := startServer(t)
	from, to := newNode(t, ts), newNode(t, ts)
	exp := linked(t)(from.br.Export[Order]("stop"))
	imp := linked(t)(to.br.Import[Order]("stop"))
	recs, cancel := to.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](8))
	defer cancel()
	from.b.Publish(Order{ID: 1})
	recv(t, recs, wait)

	done := make(chan struct{})
	for range 3 {
		go func() { imp.Stop(); done <- struct{}{} }()
	}
	for range 3 {
		<-done
	}
	imp.Stop()
	from.b.Publish(Order{ID: 2})
	none(t, recs, 100*time.Millisecond) // stopped: nothing more published
	exp.Stop()
	exp.Stop()
	if got := len(to.br.Links()) + len(from.br.Links()); got != 0 {
		t.Fatalf("%d links live after Stop", got)
	}
	if s := from.br.Stats(); s.Sent != 2 {
		t.Fatalf("the stopped export's counts are kept: %+v", s)
	}
}

func TestStopSendsWhatTheExportQueued(t *testing.T) {
	ts := startServer(t)
	from, to := newNode(t, ts), newNode(t, ts)
	imp := linked(t)(to.br.Import[Order]("queued"))
	exp := linked(t)(from.br.Export[Order]("queued"))
	const n = 500
	for i := range n {
		from.b.Publish(Order{ID: i})
	}
	exp.Stop()
	if err := from.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, wait, "every value", func() bool { return imp.Stats().Received == n })
}

func TestShutdownDrainsExportsAndStopsImports(t *testing.T) {
	ts := startServer(t)
	from, to := newNode(t, ts), newNode(t, ts)
	imp := linked(t)(to.br.Import[Order]("shutdown"))
	exp := linked(t)(from.br.Export[Order]("shutdown"))
	const n = 300
	for i := range n {
		from.b.Publish(Order{ID: i})
	}
	if err := from.b.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := exp.Stats(); s.Sent != n {
		t.Fatalf("Shutdown returned with %d of %d values sent", s.Sent, n)
	}
	waitFor(t, wait, "every value", func() bool { return imp.Stats().Received == n })

	if err := to.b.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, wait, "the import to stop", func() bool { return len(to.br.Links()) == 0 })
	if _, err := to.br.Import[Order]("shutdown"); !errors.Is(err, natsbridge.ErrClosed) {
		t.Fatalf("Import after Shutdown: %v", err)
	}
	from.br.Close()
	from.br.Close()
	if _, err := from.br.Export[Order]("shutdown"); !errors.Is(err, natsbridge.ErrClosed) {
		t.Fatalf("Export after Close: %v", err)
	}
}

func TestCoreReconnectsAfterServerRestart(t *testing.T) {
	ts := startServer(t)
	from, to := newNode(t, ts), newNode(t, ts)
	recs, cancel := to.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](1024))
	defer cancel()
	linked(t)(to.br.Import[Order]("restart"))
	linked(t)(from.br.Export[Order]("restart"))

	// Publish steadily while the server goes away and comes back.
	ctx, stop := context.WithCancel(t.Context())
	published := make(chan int)
	go func() {
		i := 0
		defer func() { published <- i }()
		for ctx.Err() == nil {
			from.b.Publish(Order{ID: i})
			i++
			time.Sleep(time.Millisecond)
		}
	}()
	recv(t, recs, wait)
	ts.restart()
	waitFor(t, wait, "both to reconnect", func() bool {
		return from.br.Stats().Reconnects > 0 && to.br.Stats().Reconnects > 0
	})
	// Once both are back, what is published crosses again.
	r0 := to.br.Stats().Received
	waitFor(t, wait, "values to cross after the restart", func() bool { return to.br.Stats().Received > r0+10 })
	stop()
	n := <-published
	for _, nd := range []*node{from, to} {
		s := nd.br.Stats()
		if s.Disconnects == 0 || nd.errors.count(natsbridge.Disconnect) == 0 {
			t.Errorf("disconnect not counted and reported: %+v", s)
		}
	}
	t.Logf("published %d, received %d: core NATS is at most once across a restart", n, to.br.Stats().Received)
}

func TestOptionMisusePanicsAndZeroOptionDoesNothing(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"Pending on Export", func() { n.br.Export[Order]("x", natsbridge.Pending[Order](1)) }},
		{"Async on Export", func() { n.br.Export[Order]("x", natsbridge.Async[Order]()) }},
		{"HandlerOptions on Import", func() { n.br.Import[Order]("x", natsbridge.HandlerOptions[Order]()) }},
		{"Pending on ExportStream", func() {
			n.br.ExportStream[Order](t.Context(), "x", natsbridge.Stream{}, natsbridge.Pending[Order](1))
		}},
		{"Async on ImportStream", func() {
			n.br.ImportStream[Order](t.Context(), "x", natsbridge.Stream{}, natsbridge.Consumer{}, natsbridge.Async[Order]())
		}},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("%s did not panic", c.name)
				}
			}()
			c.f()
		}()
	}
	l, err := n.br.Export[Order]("zero", natsbridge.Option[Order]{}, natsbridge.WithCodec[Order](nil))
	if err != nil || l.Subject() != "zero" || l.Kind() != "export" {
		t.Fatalf("%v %v", l, err)
	}
}

func TestExportOfAnInterfaceTypeSkipsImports(t *testing.T) {
	ts := startServer(t)
	n, peer := newNode(t, ts), newNode(t, ts)
	all := linked(t)(n.br.Export[any]("everything"))
	imp := linked(t)(n.br.Import[Order]("orders"))
	linked(t)(peer.br.Export[Order]("orders"))
	raw := connect(t, ts)
	got, err := raw.SubscribeSync("everything")
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Flush(); err != nil {
		t.Fatal(err)
	}
	peer.b.Publish(Order{ID: 1})
	waitFor(t, wait, "the import", func() bool { return imp.Stats().Received == 1 })
	n.b.Publish("local")
	m, err := got.NextMsg(wait)
	if err != nil || string(m.Data) != `"local"` {
		t.Fatalf("exported %q, %v", m.Data, err)
	}
	if _, err := got.NextMsg(50 * time.Millisecond); err == nil {
		t.Fatal("exported more than the local value")
	}
	if s := all.Stats(); s.Sent != 1 {
		t.Fatalf("stats %+v", s)
	}
}
