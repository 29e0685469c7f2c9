package servertest_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

// streamOf returns the JetStream view of the stream that stores subject.
func streamOf(t *testing.T, nc *nats.Conn, subject string) jetstream.Stream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	name, err := js.StreamNameBySubject(t.Context(), subject)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// publishN publishes orders first, first+1, ... first+n-1 on n's broker and
// waits until its stream export has them acknowledged.
func publishN(t *testing.T, n *node, exp *natsbridge.Link, first, count int) {
	t.Helper()
	sent := exp.Stats().Sent
	for i := range count {
		n.b.Publish(Order{ID: first + i})
	}
	waitFor(t, wait, "the stream's acknowledgements", func() bool { return exp.Stats().Sent == sent+uint64(count) })
}

// recvOrders receives n records from ch.
func recvOrders(t *testing.T, ch <-chan natsbridge.Imported[Order], n int) []natsbridge.Imported[Order] {
	t.Helper()
	rs := make([]natsbridge.Imported[Order], n)
	for i := range rs {
		rs[i] = recv(t, ch, wait)
	}
	return rs
}

func ids(rs []natsbridge.Imported[Order]) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.Value.ID
	}
	return out
}

func offsets(rs []natsbridge.Imported[Order]) []uint64 {
	out := make([]uint64, len(rs))
	for i, r := range rs {
		out[i] = r.Offset
	}
	return out
}

func TestStreamRoundTripCarriesOffsets(t *testing.T) {
	ts := startServer(t)
	from, to := newNode(t, ts), newNode(t, ts)
	exp := linked(t)(from.br.ExportStream[Order](t.Context(), "js.orders", natsbridge.Stream{}))
	publishN(t, from, exp, 10, 3)

	recs, cancel := to.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](8))
	defer cancel()
	before := time.Now()
	linked(t)(to.br.ImportStream[Order](t.Context(), "js.orders", natsbridge.Stream{}, natsbridge.Consumer{Start: natsbridge.StartEarliest()}))
	rs := recvOrders(t, recs, 3)
	if got := offsets(rs); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("offsets %v", got)
	}
	if got := ids(rs); !slices.Equal(got, []int{10, 11, 12}) {
		t.Fatalf("ids %v", got)
	}
	for _, r := range rs {
		if r.Time.IsZero() || r.Time.After(before) || r.Subject != "js.orders" {
			t.Fatalf("record %+v", r)
		}
	}
	publishN(t, from, exp, 13, 1)
	if r := recv(t, recs, wait); r.Offset != 4 || r.Value.ID != 13 {
		t.Fatalf("live record %+v", r)
	}
}

func TestStreamIsCreatedWithItsBounds(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	exp := linked(t)(n.br.ExportStream[Order](t.Context(), "bounded", natsbridge.Stream{MaxMsgs: 3, MaxAge: time.Hour, Memory: true}))
	publishN(t, n, exp, 0, 5)
	info, err := streamOf(t, n.nc, "bounded").Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c := info.Config
	if c.Name != "bounded" || c.MaxMsgs != 3 || c.MaxAge != time.Hour || c.Storage != jetstream.MemoryStorage {
		t.Fatalf("config %+v", c)
	}
	if info.State.Msgs != 3 || info.State.FirstSeq != 3 {
		t.Fatalf("state %+v", info.State)
	}
	// An offset no longer kept starts at the oldest kept.
	reader := newNode(t, ts)
	recs, cancel := reader.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](8))
	defer cancel()
	linked(t)(reader.br.ImportStream[Order](t.Context(), "bounded", natsbridge.Stream{}, natsbridge.Consumer{Start: natsbridge.StartAt(1)}))
	if got := offsets(recvOrders(t, recs, 3)); !slices.Equal(got, []uint64{3, 4, 5}) {
		t.Fatalf("At(1) after trimming: offsets %v", got)
	}
	// A second export of the subject uses the stream as it is.
	other := newNode(t, ts)
	linked(t)(other.br.ExportStream[Order](t.Context(), "bounded", natsbridge.Stream{Name: "ignored", MaxMsgs: 99}))
	if info, _ := streamOf(t, n.nc, "bounded").Info(t.Context()); info.Config.Name != "bounded" || info.Config.MaxMsgs != 3 {
		t.Fatalf("the existing stream changed: %+v", info.Config)
	}
}

func TestStreamDoesNotReturnAProcessItsOwnExports(t *testing.T) {
	ts := startServer(t)
	for _, c := range []struct {
		name     string
		consumer natsbridge.Consumer
	}{
		{"durable", natsbridge.Consumer{Durable: "self"}},
		{"ordered", natsbridge.Consumer{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			subject := "loop.js." + c.name
			self, peer := newNode(t, ts), newNode(t, ts)
			exp := linked(t)(self.br.ExportStream[Order](t.Context(), subject, natsbridge.Stream{Memory: true}))
			imp := linked(t)(self.br.ImportStream[Order](t.Context(), subject, natsbridge.Stream{}, c.consumer))
			peerExp := linked(t)(peer.br.ExportStream[Order](t.Context(), subject, natsbridge.Stream{}))
			recs, cancel := self.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](8))
			defer cancel()

			publishN(t, self, exp, 1, 1)
			publishN(t, peer, peerExp, 2, 1)
			if r := recv(t, recs, wait); r.Value.ID != 2 {
				t.Fatalf("received %+v, its own", r.Value)
			}
			waitFor(t, wait, "the echo skipped", func() bool { return imp.Stats().Echoes == 1 })

			// NoEcho alone would not have stopped it: a message the same
			// connection stores without the header comes back.
			js, _ := jetstream.New(self.nc)
			if _, err := js.Publish(t.Context(), subject, []byte(`{"id":3}`)); err != nil {
				t.Fatal(err)
			}
			if r := recv(t, recs, wait); r.Value.ID != 3 {
				t.Fatalf("received %+v", r.Value)
			}
			none(t, recs, 50*time.Millisecond)
		})
	}
}

func TestMalformedStreamMessageIsTerminated(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	const subject = "js.malformed"
	imp := linked(t)(n.br.ImportStream[Order](t.Context(), subject, natsbridge.Stream{}, natsbridge.Consumer{Durable: "m", AckWait: 200 * time.Millisecond}))
	recs, cancel := n.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](8))
	defer cancel()
	js, _ := jetstream.New(connect(t, ts))
	for _, data := range []string{`not json`, `{"id":1}`, `{"id":`, `{"id":2}`} {
		if _, err := js.Publish(t.Context(), subject, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if got := ids(recvOrders(t, recs, 2)); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("ids %v", got)
	}
	// Terminated, not redelivered after AckWait: the import goes on.
	none(t, recs, 400*time.Millisecond)
	s := imp.Stats()
	if s.DecodeErrors != 2 || s.Received != 2 || s.AckErrors != 0 || n.errors.count(natsbridge.Decode) != 2 {
		t.Fatalf("stats %+v", s)
	}
	cons, err := streamOf(t, n.nc, subject).Consumer(t.Context(), "m")
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 0 || info.NumRedelivered != 0 || info.AckFloor.Stream != 4 {
		t.Fatalf("consumer %+v", info)
	}
}

func TestDurableImportResumesAfterRestart(t *testing.T) {
	ts := startServer(t)
	from := newNode(t, ts)
	const subject = "js.durable"
	exp := linked(t)(from.br.ExportStream[Order](t.Context(), subject, natsbridge.Stream{}))
	consumer := natsbridge.Consumer{Durable: "billing", Start: natsbridge.StartEarliest()}
	publishN(t, from, exp, 0, 5)

	// The first importing process takes what is there, then ends.
	first := newNode(t, ts)
	recs, cancel := first.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](16))
	imp := linked(t)(first.br.ImportStream[Order](t.Context(), subject, natsbridge.Stream{}, consumer))
	if got := ids(recvOrders(t, recs, 5)); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("first process got %v", got)
	}
	imp.Stop()
	cancel()
	first.br.Close()
	first.nc.Close()

	publishN(t, from, exp, 5, 5) // while no process imports

	// The restarted process resumes after what the first acknowledged.
	second := newNode(t, ts)
	recs, cancel = second.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](16))
	defer cancel()
	linked(t)(second.br.ImportStream[Order](t.Context(), subject, natsbridge.Stream{}, consumer))
	rs := recvOrders(t, recs, 5)
	if got := ids(rs); !slices.Equal(got, []int{5, 6, 7, 8, 9}) {
		t.Fatalf("restarted process got %v", got)
	}
	if got := offsets(rs); !slices.Equal(got, []uint64{6, 7, 8, 9, 10}) {
		t.Fatalf("offsets %v", got)
	}
	for _, r := range rs {
		if r.Delivered != 1 {
			t.Fatalf("redelivered: %+v", r)
		}
	}
	none(t, recs, 50*time.Millisecond)
}

func TestReplayFromAChosenStart(t *testing.T) {
	ts := startServer(t)
	from := newNode(t, ts)
	const subject = "js.replay"
	exp := linked(t)(from.br.ExportStream[Order](t.Context(), subject, natsbridge.Stream{}))
	publishN(t, from, exp, 1, 5)
	time.Sleep(5 * time.Millisecond) // a time between the fifth and the sixth
	mid := time.Now()
	publishN(t, from, exp, 6, 5)

	for i, c := range []struct {
		name  string
		start natsbridge.StreamStart
		want  []uint64
	}{
		{"earliest", natsbridge.StartEarliest(), []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"at a sequence", natsbridge.StartAt(4), []uint64{4, 5, 6, 7, 8, 9, 10}},
		{"last n", natsbridge.StartLast(3), []uint64{8, 9, 10}},
		{"last more than kept", natsbridge.StartLast(50), []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"since a time", natsbridge.StartSince(mid), []uint64{6, 7, 8, 9, 10}},
		{"next", natsbridge.StartNew(), nil},
	} {
		for _, durable := range []string{"", "d"} {
			name := c.name + " ordered"
			if durable != "" {
				name = c.name + " durable"
				durable = "replay" + string(rune('a'+i))
			}
			t.Run(name, func(t *testing.T) {
				to := newNode(t, ts)
				recs, cancel := to.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](16))
				defer cancel()
				linked(t)(to.br.ImportStream[Order](t.Context(), subject, natsbridge.Stream{}, natsbridge.Consumer{Durable: durable, Start: c.start}))
				if got := offsets(recvOrders(t, recs, len(c.want))); !slices.Equal(got, c.want) {
					t.Fatalf("offsets %v, want %v", got, c.want)
				}
				none(t, recs, 30*time.Millisecond)
				if c.name == "next" { // the last case: it may add to the stream
					publishN(t, from, exp, 100, 1)
					if r := recv(t, recs, wait); r.Value.ID != 100 {
						t.Fatalf("live record %+v", r)
					}
				}
			})
		}
	}
}

func TestStreamIsAtLeastOnceAcrossServerRestart(t *testing.T) {
	ts := startServer(t)
	from, to := newNode(t, ts), newNode(t, ts)
	const subject = "js.restart"
	exp := linked(t)(from.br.ExportStream[Order](t.Context(), subject, natsbridge.Stream{}))
	recs, cancel := to.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](4096))
	defer cancel()
	imp := linked(t)(to.br.ImportStream[Order](t.Context(), subject, natsbridge.Stream{}, natsbridge.Consumer{Durable: "r", AckWait: time.Second}))

	// Publish steadily while the server goes away and comes back, with
	// its store.
	ctx, stop := context.WithCancel(t.Context())
	var published atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil; i++ {
			from.b.Publish(Order{ID: i})
			published.Store(int64(i + 1))
			time.Sleep(2 * time.Millisecond)
		}
	}()
	first := recv(t, recs, wait)
	ts.restart()
	waitFor(t, wait, "both to reconnect", func() bool {
		return from.br.Stats().Reconnects > 0 && to.br.Stats().Reconnects > 0
	})
	r0 := imp.Stats().Received
	waitFor(t, wait, "values to cross after the restart", func() bool { return imp.Stats().Received > r0+10 })
	stop()
	<-done
	n := int(published.Load())

	// Every value published crosses, some maybe twice.
	seen := make([]bool, n)
	seen[first.Value.ID] = true
	missing := n - 1
	deadline := time.After(2 * wait)
	for missing > 0 {
		select {
		case r := <-recs:
			if id := r.Value.ID; id < n && !seen[id] {
				seen[id] = true
				missing--
			}
		case <-deadline:
			var ms []int
			for id, ok := range seen {
				if !ok {
					ms = append(ms, id)
				}
			}
			st := streamOf(t, to.nc, subject)
			info, _ := st.Info(t.Context())
			cons, _ := st.Consumer(t.Context(), "r")
			ci, _ := cons.Info(t.Context())
			t.Fatalf("values %v of %d never crossed; export %+v, import %+v; stream %+v; consumer %+v", ms, n, exp.Stats(), imp.Stats(), info.State, ci)
		}
	}
	if s := from.br.Stats(); s.Disconnects == 0 {
		t.Errorf("disconnect not counted: %+v", s)
	}
	t.Logf("published %d; export %+v; import %+v", n, exp.Stats(), imp.Stats())
}

func TestAsyncStreamExportCountsEveryAck(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	const subject = "js.async"
	var lost atomic.Uint64 // by the broker, on the export's queue
	exp := linked(t)(n.br.ExportStream[Order](t.Context(), subject, natsbridge.Stream{Memory: true},
		natsbridge.Async[Order](),
		natsbridge.HandlerOptions(topic.OnLoss(func(topic.Loss[Order]) { lost.Add(1) }))))
	const count = 2000
	for i := range count {
		n.b.Publish(Order{ID: i})
	}
	exp.Stop() // sends what is queued, then waits for the acknowledgements
	s := exp.Stats()
	if s.Sent+s.PublishErrors+lost.Load() != count || s.PublishErrors != 0 || s.Sent < natsbridge.DefaultBuffer {
		t.Fatalf("stats %+v, %d lost on the broker", s, lost.Load())
	}
	t.Logf("%d sent, %d lost on the broker's queue", s.Sent, lost.Load())
	info, err := streamOf(t, n.nc, subject).Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != s.Sent {
		t.Fatalf("stream holds %d, export counts %d sent", info.State.Msgs, s.Sent)
	}
}

func TestShutdownStopsAStreamImportWhichResumesLater(t *testing.T) {
	ts := startServer(t)
	from := newNode(t, ts)
	const subject = "js.shutdown"
	exp := linked(t)(from.br.ExportStream[Order](t.Context(), subject, natsbridge.Stream{}))
	consumer := natsbridge.Consumer{Durable: "s", Start: natsbridge.StartEarliest()}

	first := newNode(t, ts)
	recs, cancel := first.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](16))
	defer cancel()
	linked(t)(first.br.ImportStream[Order](t.Context(), subject, natsbridge.Stream{}, consumer))
	publishN(t, from, exp, 0, 3)
	recvOrders(t, recs, 3)
	if err := first.b.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, wait, "the import to stop", func() bool { return len(first.br.Links()) == 0 })
	publishN(t, from, exp, 3, 3)

	second := newNode(t, ts)
	recs2, cancel2 := second.b.Subscribe(topic.Buffer[natsbridge.Imported[Order]](16))
	defer cancel2()
	linked(t)(second.br.ImportStream[Order](t.Context(), subject, natsbridge.Stream{}, consumer))
	if got := ids(recvOrders(t, recs2, 3)); !slices.Equal(got, []int{3, 4, 5}) {
		t.Fatalf("got %v", got)
	}
}

func TestAsyncPublishFailureIsCountedAndReported(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	const subject = "js.async.fail"
	exp := linked(t)(n.br.ExportStream[Order](t.Context(), subject, natsbridge.Stream{Memory: true}, natsbridge.Async[Order]()))
	js, _ := jetstream.New(n.nc)
	if err := js.DeleteStream(t.Context(), "js_async_fail"); err != nil {
		t.Fatal(err)
	}
	n.b.Publish(Order{ID: 1}) // no stream stores it any more
	waitFor(t, wait, "the failure", func() bool { return exp.Stats().PublishErrors == 1 })
	if e := n.errors.first(natsbridge.Publish); e == nil || e.Subject != subject {
		t.Fatalf("reported %v", e)
	}
	exp.Stop() // nothing left to wait for
	if s := exp.Stats(); s.Sent != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSyncExportRetriesThenDeadLetters(t *testing.T) {
	ts := startServer(t)
	n := newNode(t, ts)
	const subject = "js.dead"
	dead, cancel := n.b.Subscribe(topic.Buffer[topic.DeadLetter[Order]](1))
	defer cancel()
	exp := linked(t)(n.br.ExportStream[Order](t.Context(), subject, natsbridge.Stream{Memory: true},
		natsbridge.HandlerOptions(topic.Retry[Order](topic.RetryPolicy{Attempts: 2}))))
	js, _ := jetstream.New(n.nc)
	if err := js.DeleteStream(t.Context(), "js_dead"); err != nil {
		t.Fatal(err)
	}
	n.b.Publish(Order{ID: 9})
	d := recv(t, dead, wait)
	var e *natsbridge.Error
	if d.Value.ID != 9 || d.Attempts != 2 || !errors.As(d.Err, &e) || e.Op != natsbridge.Publish {
		t.Fatalf("dead letter %+v", d)
	}
	if s := exp.Stats(); s.PublishErrors != 2 || s.Sent != 0 {
		t.Fatalf("stats %+v", s)
	}
}
