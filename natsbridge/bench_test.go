package natsbridge_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

// Tick is the 64-byte value of the benchmarks.
type Tick struct {
	Seq                 int64
	A, B, C, D, E, F, G int64
}

// Raw is a 64-byte value that rawCodec copies as it is: with it, a bridge
// benchmark measures the bridge and not the codec.
type Raw [64]byte

type rawCodec struct{}

func (rawCodec) Marshal(v Raw) ([]byte, error) { return append([]byte(nil), v[:]...), nil }

func (rawCodec) Unmarshal(data []byte) (Raw, error) {
	var v Raw
	if len(data) != len(v) {
		return v, fmt.Errorf("rawCodec: %d bytes", len(data))
	}
	copy(v[:], data)
	return v, nil
}

var benchTick = Tick{Seq: 1, A: 1 << 40, B: 1 << 41, C: 1 << 42, D: 1 << 43, E: 1 << 44, F: 1 << 45, G: 1 << 46}

// window bounds the messages in flight between a publisher and a
// receiver, so that neither a queue of the broker nor one of nats.go
// overflows: a throughput benchmark must not measure losses. The publisher
// waits, once the window is full, until half of it has been received; a
// receiver wakes it only then, so the cost is paid once per half window.
type window struct {
	size   int64
	done   atomic.Int64 // messages received
	target atomic.Int64 // the count the publisher waits for, or 0
	wake   chan struct{}
}

func newWindow(size int64) *window { return &window{size: size, wake: make(chan struct{}, 1)} }

// release records one message received.
func (w *window) release() {
	n := w.done.Add(1)
	if t := w.target.Load(); t != 0 && n >= t && w.target.CompareAndSwap(t, 0) {
		w.wake <- struct{}{}
	}
}

// until waits until n messages have been received.
func (w *window) until(b *testing.B, n int64) {
	if w.done.Load() >= n {
		return
	}
	w.target.Store(n)
	if w.done.Load() >= n && w.target.CompareAndSwap(n, 0) {
		return
	}
	select {
	case <-w.wake:
	case <-time.After(10 * time.Second):
		b.Fatalf("%d of %d messages received: lost", w.done.Load(), n)
	}
}

// admit waits until the message after sent ones may be published.
func (w *window) admit(b *testing.B, sent int64) {
	if sent-w.done.Load() >= w.size {
		w.until(b, sent-w.size/2)
	}
}

const benchWindow = 2048

func reportRate(b *testing.B, start time.Time) {
	d := time.Since(start)
	b.ReportMetric(float64(b.N)/d.Seconds(), "msgs/s")
	b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "ns/msg")
}

// BenchmarkRoundTrip sends values from one connection to another through
// the same embedded server: plain nats.go, publishing the same bytes the
// bridge would and counting them in the subscription's callback, next to
// the bridge, exporting from one broker and importing into another, where
// a handler counts them. Each benchmark is a loop of b.N messages and the
// wait for the last one (not b.Loop, which would stop the clock before it).
func BenchmarkRoundTrip(b *testing.B) {
	ts := startServer(b)
	raw := Raw{1, 2, 3}
	jsonTick, _ := natsbridge.JSON[Tick]{}.Marshal(benchTick)
	b.Run("codec=raw/nats", func(b *testing.B) { benchPlain(b, ts, raw[:]) })
	b.Run("codec=raw/bridge", func(b *testing.B) { benchBridge(b, ts, raw, natsbridge.WithCodec[Raw](rawCodec{})) })
	b.Run("codec=json/nats", func(b *testing.B) { benchPlain(b, ts, jsonTick) })
	b.Run("codec=json/bridge", func(b *testing.B) { benchBridge(b, ts, benchTick) })
}

func benchPlain(b *testing.B, ts *testServer, data []byte) {
	pub, sub := connect(b, ts), connect(b, ts)
	w := newWindow(benchWindow)
	s, err := sub.Subscribe("bench.plain", func(*nats.Msg) { w.release() })
	if err != nil {
		b.Fatal(err)
	}
	defer s.Unsubscribe()
	if err := sub.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range int64(b.N) {
		w.admit(b, i)
		if err := pub.Publish("bench.plain", data); err != nil {
			b.Fatal(err)
		}
	}
	w.until(b, int64(b.N))
	b.StopTimer()
	reportRate(b, start)
}

func benchBridge[T any](b *testing.B, ts *testServer, v T, opts ...natsbridge.Option[T]) {
	from, to := newNode(b, ts), newNode(b, ts)
	w := newWindow(benchWindow)
	stop := to.b.Handle(func(_ context.Context, _ natsbridge.Imported[T]) error {
		w.release()
		return nil
	}, topic.Buffer[natsbridge.Imported[T]](2*benchWindow))
	defer stop()
	linked(b)(to.br.Import[T]("bench.bridge", opts...))
	linked(b)(from.br.Export[T]("bench.bridge", append(opts, natsbridge.HandlerOptions(topic.Buffer[T](2*benchWindow)))...))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range int64(b.N) {
		w.admit(b, i)
		from.b.Publish(v)
	}
	w.until(b, int64(b.N))
	b.StopTimer()
	reportRate(b, start)
	if s := to.br.Stats(); s.Received != uint64(b.N) || s.Dropped != 0 {
		b.Fatalf("stats %+v", s)
	}
}

var benchStreams atomic.Int64

// BenchmarkStreamExport stores values in a JetStream stream on disk: the
// bridge's export, waiting for each acknowledgement (sync) or not (async),
// next to plain jetstream publications of the same bytes.
func BenchmarkStreamExport(b *testing.B) {
	ts := startServer(b)
	data, _ := natsbridge.JSON[Tick]{}.Marshal(benchTick)
	for _, mode := range []string{"sync", "async"} {
		b.Run("mode="+mode+"/jetstream", func(b *testing.B) { benchPlainStream(b, ts, data, mode == "async") })
		b.Run("mode="+mode+"/bridge", func(b *testing.B) { benchStreamExport(b, ts, mode == "async") })
	}
}

// benchSubject returns a subject of its own stream, bounded.
func benchSubject(b *testing.B, nc *nats.Conn) string {
	subject := fmt.Sprintf("bench.stream.%d", benchStreams.Add(1))
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(b.Context(), jetstream.StreamConfig{
		Name: natsbridgeStreamName(subject), Subjects: []string{subject}, MaxMsgs: 100_000,
	}); err != nil {
		b.Fatal(err)
	}
	return subject
}

func natsbridgeStreamName(subject string) string {
	out := []byte(subject)
	for i, c := range out {
		if c == '.' {
			out[i] = '_'
		}
	}
	return string(out)
}

func benchPlainStream(b *testing.B, ts *testServer, data []byte, async bool) {
	nc := connect(b, ts)
	subject := benchSubject(b, nc)
	js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(natsbridge.DefaultMaxAckPending))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		var err error
		if async {
			_, err = js.PublishAsync(subject, data)
		} else {
			_, err = js.Publish(b.Context(), subject, data)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if async {
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(10 * time.Second):
			b.Fatal("acknowledgements missing")
		}
	}
	b.StopTimer()
	reportRate(b, start)
}

func benchStreamExport(b *testing.B, ts *testServer, async bool) {
	n := newNode(b, ts)
	subject := benchSubject(b, n.nc)
	opts := []natsbridge.Option[Tick]{natsbridge.HandlerOptions(topic.Buffer[Tick](2 * benchWindow))}
	if async {
		opts = append(opts, natsbridge.Async[Tick]())
	}
	exp := linked(b)(n.br.ExportStream[Tick](b.Context(), subject, natsbridge.Stream{}, opts...))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	sent := func() int64 { return int64(exp.Stats().Sent) }
	for i := range int64(b.N) {
		for i-sent() >= benchWindow { // rarely: the export keeps up with most of the window
			time.Sleep(20 * time.Microsecond)
		}
		n.b.Publish(benchTick)
	}
	deadline := time.Now().Add(10 * time.Second)
	for sent() < int64(b.N) {
		if time.Now().After(deadline) {
			b.Fatalf("stats %+v", exp.Stats())
		}
		time.Sleep(20 * time.Microsecond)
	}
	b.StopTimer()
	reportRate(b, start)
}
