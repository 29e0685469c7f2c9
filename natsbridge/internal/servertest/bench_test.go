package servertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
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
	diag   func() string // if not nil, says more when a wait fails
}

func newWindow(size int64) *window { return &window{size: size, wake: make(chan struct{}, 1)} }

// release records one message received.
func (w *window) release() {
	n := w.done.Add(1)
	if t := w.target.Load(); t != 0 && n >= t && w.target.CompareAndSwap(t, 0) {
		w.wake <- struct{}{}
	}
}

// until waits until n messages have been received. It fails the benchmark
// if none arrives for benchTimeout: a loss, or a stall.
func (w *window) until(b *testing.B, n int64) {
	if w.done.Load() >= n {
		return
	}
	w.target.Store(n)
	if w.done.Load() >= n && w.target.CompareAndSwap(n, 0) {
		return
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	last, since := w.done.Load(), time.Now()
	for {
		select {
		case <-w.wake:
			return
		case now := <-t.C:
			if d := w.done.Load(); d != last {
				last, since = d, now
			} else if now.Sub(since) > benchTimeout {
				more := ""
				if w.diag != nil {
					more = ": " + w.diag()
				}
				b.Fatalf("%d of %d messages received, none for %v%s", d, n, benchTimeout, more)
			}
		}
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

// cpuMeter measures the CPU time the process spends, user and system, the
// embedded server's included, from start to stop, and reports it per
// message as cpu-ns/op: on a machine shared with other work, it moves less
// than the time per message does, since another process's load delays the
// benchmark but does not add to its CPU time. It reads /proc/self/stat, in
// ticks of 10ms (USER_HZ): meaningful over rounds of a second, as
// -benchtime's default; elsewhere than on Linux it reports nothing.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

func startCPU() cpuMeter {
	t, ok := cpuTime()
	return cpuMeter{start: t, ok: ok}
}

func (m cpuMeter) stop(b *testing.B) {
	if t, ok := cpuTime(); ok && m.ok {
		b.ReportMetric(float64((t-m.start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// cpuTime returns the CPU time the process has used, from /proc/self/stat.
func cpuTime() (time.Duration, bool) {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// The fields after the command, which is in parentheses: the state
	// (field 3), ..., utime and stime (14 and 15), in ticks of 1/100s.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
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

// The throughput pairs below each set the bridge beside plain nats.go doing
// the same work in the same run, on the same embedded server, so that
// benchstat can compare BenchmarkX/bridge with BenchmarkX/nats. Every one is
// a loop of b.N messages in steady state: the link or the plain equivalent
// is set up, and benchWarmup messages have crossed it, before the timer
// starts; the timer stops once the last message has arrived (acknowledged,
// received or handled), so ns/op is the time per message. allocs/op counts
// the whole process: the embedded server's allocations too, the same on both
// sides. Streams are in memory, created before the timer and deleted after
// each round.

// benchWarmup is the count of messages sent through each link before the
// timer starts.
const benchWarmup = 1000

// benchTimeout bounds every wait of a benchmark for progress: a message
// that never comes fails it rather than hanging it. It is longer than the
// stalls of nats.go's pull consumers, seen on a loaded machine (the client
// believes a pull request outstanding that the server does not hold): they
// end when the client misses two idle heartbeats, 2×15s for Messages'
// default 30s expiry, and pulls again.
const benchTimeout = 45 * time.Second

// asyncWindow is the flow-control window of the Async stream exports: twice
// the acknowledgements they may await (Config.MaxAckPending, and the plain
// publisher's WithPublishAsyncMaxPending), so that the window never limits
// them before that bound does.
const asyncWindow = 2 * natsbridge.DefaultMaxAckPending

// importBuffer is the capacity of the broker subscription (or plain
// channel) that a stream import feeds: a stream delivers as fast as it can,
// with no window, so the drain must never fall that far behind.
const importBuffer = 1 << 16

// progress is a window for a publisher whose receiver is an export, whose
// count of messages sent (done) can only be read, not waited for: as
// window, it keeps at most size messages in flight and, once the window is
// full, waits until half of it is free; it reads done only when its last
// reading says the window may be full, and polls it, sleeping, while it is.
type progress struct {
	size int64
	done func() int64
	seen int64 // done, as last read: the publisher's alone
}

func newProgress(size int64, done func() int64) *progress {
	return &progress{size: size, done: done}
}

// admit waits until the message after sent ones may be published.
func (p *progress) admit(b *testing.B, sent int64) {
	if sent-p.seen < p.size {
		return
	}
	p.seen = p.done()
	if sent-p.seen >= p.size {
		p.until(b, sent-p.size/2)
	}
}

// until waits until n messages have been sent. It fails the benchmark if
// none is sent for benchTimeout.
func (p *progress) until(b *testing.B, n int64) {
	last, since := p.seen, time.Now()
	for {
		d := p.done()
		if d >= n {
			p.seen = d
			return
		}
		if d != last {
			last, since = d, time.Now()
		} else if time.Since(since) > benchTimeout {
			b.Fatalf("%d of %d messages sent, none for %v", d, n, benchTimeout)
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// runExport times b.N calls of publish, each admitted by p, after
// benchWarmup of them, up to the last one sent; then, if nc is not nil, a
// flush of nc, so that the server has them all.
func runExport(b *testing.B, p *progress, nc *nats.Conn, publish func()) {
	for i := range int64(benchWarmup) {
		p.admit(b, i)
		publish()
	}
	p.until(b, benchWarmup)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU()
	for i := range int64(b.N) {
		p.admit(b, benchWarmup+i)
		publish()
	}
	p.until(b, benchWarmup+int64(b.N))
	if nc != nil {
		if err := nc.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu.stop(b)
}

// encoder is the plain equivalent of an export's handler subscription: a
// queue of the same capacity, and one goroutine that takes each value from
// it and sends it with send, counting it in sent when send returns nil.
type encoder struct {
	ch   chan Tick
	sent atomic.Int64
	done chan struct{}
}

func newEncoder(b *testing.B, capacity int, send func(Tick) error) *encoder {
	e := &encoder{ch: make(chan Tick, capacity), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		for v := range e.ch {
			if err := send(v); err != nil {
				b.Error(err) // and not counted: the benchmark times out
				continue
			}
			e.sent.Add(1)
		}
	}()
	b.Cleanup(func() {
		close(e.ch)
		<-e.done
	})
	return e
}

// drain receives from ch, releasing one message of w for each value, until
// stop is closed: a subscriber that does nothing else.
func drain[T any](b *testing.B, ch <-chan T, w *window) {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					return
				}
				w.release()
			case <-stop:
				return
			}
		}
	}()
	b.Cleanup(func() {
		close(stop)
		<-done
	})
}

// BenchmarkCoreExport sends values to core NATS, with no subscriber: the
// bridge's export of the values published on a broker, next to plain
// nats.go encoding them as JSON and publishing them from a goroutine that
// takes them from a channel (nats), the plain equivalent of the export's
// handler queue, and for reference on the publisher's own goroutine
// (nats-direct), which pays no hand-off between goroutines. The publisher
// keeps at most benchWindow values queued; the timer stops once the last is
// handed to nats.go and a flush has brought them all to the server.
func BenchmarkCoreExport(b *testing.B) {
	ts := startServer(b)
	const subject = "bench.core.export"
	b.Run("bridge", func(b *testing.B) {
		n := newNode(b, ts)
		exp := linked(b)(n.br.Export[Tick](subject, natsbridge.HandlerOptions(topic.Buffer[Tick](2*benchWindow))))
		p := newProgress(benchWindow, func() int64 { return int64(exp.Stats().Sent) })
		runExport(b, p, n.nc, func() { n.b.Publish(benchTick) })
		if s := exp.Stats(); s.EncodeErrors+s.PublishErrors != 0 {
			b.Fatalf("stats %+v", s)
		}
	})
	b.Run("nats", func(b *testing.B) {
		nc := connect(b, ts)
		e := newEncoder(b, 2*benchWindow, func(v Tick) error {
			data, err := json.Marshal(v)
			if err != nil {
				return err
			}
			return nc.Publish(subject, data)
		})
		runExport(b, newProgress(benchWindow, e.sent.Load), nc, func() { e.ch <- benchTick })
	})
	b.Run("nats-direct", func(b *testing.B) {
		nc := connect(b, ts)
		var sent atomic.Int64
		runExport(b, newProgress(benchWindow, sent.Load), nc, func() {
			data, err := json.Marshal(benchTick)
			if err == nil {
				err = nc.Publish(subject, data)
			}
			if err != nil {
				b.Fatal(err)
			}
			sent.Add(1)
		})
	})
}

// runImport publishes data on subject through pub, each message admitted
// by w, benchWarmup of them and then b.N timed, up to the last received.
func runImport(b *testing.B, pub *nats.Conn, subject string, data []byte, w *window) {
	send := func(from, to int64) {
		for i := from; i < to; i++ {
			w.admit(b, i)
			if err := pub.Publish(subject, data); err != nil {
				b.Fatal(err)
			}
		}
	}
	send(0, benchWarmup)
	w.until(b, benchWarmup)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU()
	send(benchWarmup, benchWarmup+int64(b.N))
	w.until(b, benchWarmup+int64(b.N))
	b.StopTimer()
	cpu.stop(b)
}

// BenchmarkCoreImport receives JSON messages from core NATS, published by
// another connection under a window of benchWindow messages: the bridge's
// import, publishing each decoded on a broker where a subscriber drains
// them, next to a plain nats.go subscription whose callback decodes each
// and hands it to a channel that a goroutine drains.
func BenchmarkCoreImport(b *testing.B) {
	ts := startServer(b)
	const subject = "bench.core.import"
	data, _ := json.Marshal(benchTick)
	b.Run("bridge", func(b *testing.B) {
		n := newNode(b, ts)
		w := newWindow(benchWindow)
		ch, cancel := n.b.Subscribe(topic.Buffer[natsbridge.Imported[Tick]](2 * benchWindow))
		b.Cleanup(cancel)
		drain(b, ch, w)
		imp := linked(b)(n.br.Import[Tick](subject))
		runImport(b, connect(b, ts), subject, data, w)
		if s := imp.Stats(); s.Received != benchWarmup+uint64(b.N) || s.DecodeErrors+s.Dropped != 0 {
			b.Fatalf("stats %+v", s)
		}
	})
	b.Run("nats", func(b *testing.B) {
		nc := connect(b, ts)
		w := newWindow(benchWindow)
		ch := make(chan Tick, 2*benchWindow)
		drain(b, ch, w)
		s, err := nc.Subscribe(subject, func(m *nats.Msg) {
			var v Tick
			if err := json.Unmarshal(m.Data, &v); err != nil {
				b.Error(err)
				return
			}
			ch <- v
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Unsubscribe() })
		if err := nc.Flush(); err != nil {
			b.Fatal(err)
		}
		runImport(b, connect(b, ts), subject, data, w)
	})
}

var benchStreams atomic.Int64

// startBenchServer is startServer with room in memory for the streams of
// the stream benchmarks, which store every message of a round (a second's
// worth at least) before or while they are consumed.
func startBenchServer(b *testing.B) *testServer {
	ts := startServer(b)
	ts.opts.JetStreamMaxMemory = 4 << 30
	ts.restart()
	return ts
}

// benchStream creates, through admin, a memory stream storing a subject of
// its own, and returns the subject. The stream is deleted at the end of the
// round: connect admin before the links that use the stream, so that they
// are stopped (cleaned up) first.
func benchStream(b *testing.B, admin *nats.Conn) string {
	subject := fmt.Sprintf("bench.stream.%d", benchStreams.Add(1))
	name := natsbridgeStreamName(subject)
	js, err := jetstream.New(admin)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateStream(b.Context(), jetstream.StreamConfig{
		Name: name, Subjects: []string{subject}, Storage: jetstream.MemoryStorage, MaxMsgs: -1,
	}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = js.DeleteStream(context.Background(), name) })
	return subject
}

// natsbridgeStreamName is the name the bridge derives from subject.
func natsbridgeStreamName(subject string) string {
	out := []byte(subject)
	for i, c := range out {
		if c == '.' {
			out[i] = '_'
		}
	}
	return string(out)
}

// BenchmarkStreamExport stores values in a memory stream: the bridge's
// stream export, waiting for each acknowledgement (sync) or awaiting up to
// DefaultMaxAckPending of them (async, Async), next to plain jetstream
// publications of the same JSON from a goroutine that takes the values from
// a channel, as the export's handler does: PublishMsg, and PublishMsgAsync
// with WithPublishAsyncMaxPending(DefaultMaxAckPending). The plain
// messages carry no header; the bridge's carry the OriginHeader and, sync,
// a message ID (see nats-headers). The timer stops once the stream has
// acknowledged the last value.
func BenchmarkStreamExport(b *testing.B) {
	ts := startBenchServer(b)
	b.Run("sync", func(b *testing.B) {
		b.Run("bridge", func(b *testing.B) { benchStreamExport(b, ts, false) })
		b.Run("nats", func(b *testing.B) { benchPlainStreamExport(b, ts, false, false) })
		b.Run("nats-headers", func(b *testing.B) { benchPlainStreamExport(b, ts, false, true) })
	})
	b.Run("async", func(b *testing.B) {
		b.Run("bridge", func(b *testing.B) { benchStreamExport(b, ts, true) })
		b.Run("nats", func(b *testing.B) { benchPlainStreamExport(b, ts, true, false) })
		b.Run("nats-headers", func(b *testing.B) { benchPlainStreamExport(b, ts, true, true) })
	})
}

func benchStreamExport(b *testing.B, ts *testServer, async bool) {
	subject := benchStream(b, connect(b, ts))
	n := newNode(b, ts)
	size := int64(benchWindow)
	if async {
		size = asyncWindow
	}
	opts := []natsbridge.Option[Tick]{natsbridge.HandlerOptions(topic.Buffer[Tick](2 * int(size)))}
	if async {
		opts = append(opts, natsbridge.Async[Tick]())
	}
	exp := linked(b)(n.br.ExportStream[Tick](b.Context(), subject, natsbridge.Stream{}, opts...))
	p := newProgress(size, func() int64 { return int64(exp.Stats().Sent) })
	runExport(b, p, nil, func() { n.b.Publish(benchTick) })
	if s := exp.Stats(); s.EncodeErrors+s.PublishErrors+s.Duplicates != 0 {
		b.Fatalf("stats %+v", s)
	}
}

// benchPlainStreamExport is benchStreamExport in plain jetstream; with
// headers, each message carries what the bridge's do: an origin header and,
// sync, a message ID, so that the server does the same work.
func benchPlainStreamExport(b *testing.B, ts *testServer, async, headers bool) {
	subject := benchStream(b, connect(b, ts))
	nc := connect(b, ts)
	var acked atomic.Int64
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(natsbridge.DefaultMaxAckPending),
		jetstream.WithPublishAsyncAckHandler(func(jetstream.JetStream, *nats.Msg, *jetstream.PubAck) { acked.Add(1) }),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) { b.Error(err) }),
	)
	if err != nil {
		b.Fatal(err)
	}
	const origin = "0123456789abcdef" // as long as a bridge's
	var seq uint64
	message := func(v Tick) (*nats.Msg, error) {
		data, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		m := &nats.Msg{Subject: subject, Data: data}
		switch {
		case headers && async:
			m.Header = nats.Header{natsbridge.OriginHeader: []string{origin}}
		case headers:
			seq++
			m.Header = nats.Header{natsbridge.OriginHeader: []string{origin}, jetstream.MsgIDHeader: []string{origin + "-" + strconv.FormatUint(seq, 10)}}
		}
		return m, nil
	}
	var e *encoder
	var p *progress
	if async {
		e = newEncoder(b, 2*asyncWindow, func(v Tick) error {
			m, err := message(v)
			if err == nil {
				_, err = js.PublishMsgAsync(m)
			}
			return err
		})
		p = newProgress(asyncWindow, acked.Load)
	} else {
		e = newEncoder(b, 2*benchWindow, func(v Tick) error {
			m, err := message(v)
			if err == nil {
				_, err = js.PublishMsg(context.Background(), m)
			}
			return err
		})
		p = newProgress(benchWindow, e.sent.Load)
	}
	runExport(b, p, nil, func() { e.ch <- benchTick })
}

// preload stores count copies of data on subject, through nc, and checks
// that the stream holds them.
func preload(b *testing.B, nc *nats.Conn, subject string, data []byte, count int) {
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(natsbridge.DefaultMaxAckPending))
	if err != nil {
		b.Fatal(err)
	}
	for range count {
		// A busy machine may keep the acknowledgements longer than
		// nats.go's default stall wait, 200ms.
		if _, err := js.PublishAsync(subject, data, jetstream.WithStallWait(benchTimeout)); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(benchTimeout):
		b.Fatal("preload: acknowledgements missing")
	}
	st, err := js.Stream(b.Context(), natsbridgeStreamName(subject))
	if err != nil {
		b.Fatal(err)
	}
	if info, err := st.Info(b.Context()); err != nil || info.State.Msgs != uint64(count) {
		b.Fatalf("preload: %d of %d messages stored (%v)", info.State.Msgs, count, err)
	}
}

// runConsume times the consumption of b.N messages of a stream preloaded
// with benchWarmup+b.N, released on w: after the first benchWarmup, up to
// the last.
func runConsume(b *testing.B, w *window) {
	w.until(b, benchWarmup)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU()
	w.until(b, benchWarmup+int64(b.N))
	b.StopTimer()
	cpu.stop(b)
}

// consumerState says where the consumer "bench" of subject's stream is, for
// a wait that fails.
func consumerState(admin *nats.Conn, subject string) func() string {
	return func() string {
		js, err := jetstream.New(admin)
		if err != nil {
			return err.Error()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := js.Consumer(ctx, natsbridgeStreamName(subject), "bench")
		if err != nil {
			return err.Error()
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("consumer delivered %+v, acknowledged %+v, pending %d, awaiting acks %d, redelivered %d, pull requests waiting %d",
			info.Delivered, info.AckFloor, info.NumPending, info.NumAckPending, info.NumRedelivered, info.NumWaiting)
	}
}

// plainConsumer creates the durable consumer that the bridge would, with
// explicit acknowledgements from the start of the stream, and returns its
// messages, asking for pending ahead if above zero; the iterator is stopped
// at the end of the round.
func plainConsumer(b *testing.B, nc *nats.Conn, subject string, pending int) jetstream.MessagesContext {
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	cons, err := js.CreateConsumer(b.Context(), natsbridgeStreamName(subject), jetstream.ConsumerConfig{
		Durable:       "bench",
		FilterSubject: subject,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
	})
	if err != nil {
		b.Fatal(err)
	}
	var opts []jetstream.PullMessagesOpt
	if pending > 0 {
		opts = append(opts, jetstream.PullMaxMessages(pending))
	}
	it, err := cons.Messages(opts...)
	if err != nil {
		b.Fatal(err)
	}
	return it
}

// consumeLoop runs handle with each message of it, on a goroutine of its
// own, until it is stopped; both at the end of the round.
func consumeLoop(b *testing.B, it jetstream.MessagesContext, handle func(jetstream.Msg)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := it.Next()
			if err != nil {
				if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
					return
				}
				if errors.Is(err, jetstream.ErrNoHeartbeat) {
					b.Logf("consumer stalled: %v", err) // see benchTimeout
				} else {
					b.Error(err)
				}
				continue
			}
			handle(m)
		}
	}()
	b.Cleanup(func() {
		it.Stop()
		<-done
	})
}

// checkConsumed checks that l has counted every message of the round
// (Handled is counted just after the function returns, so it may lag the
// function's count for a moment) and failed none; its consume errors are
// the stalls benchTimeout allows for, logged.
func checkConsumed(b *testing.B, l *natsbridge.Link, count func(natsbridge.Stats) uint64) {
	want := benchWarmup + uint64(b.N)
	waitFor(b, time.Second, "the link's counts", func() bool { return count(l.Stats()) >= want })
	s := l.Stats()
	if count(s) != want || s.Retried+s.DecodeErrors+s.AckErrors+s.Echoes != 0 {
		b.Fatalf("stats %+v", s)
	}
	if s.ConsumeErrors != 0 {
		b.Logf("%d consume errors (stalls: see benchTimeout)", s.ConsumeErrors)
	}
}

// BenchmarkStreamImport consumes a memory stream preloaded with JSON
// messages: the bridge's durable stream import, publishing each decoded on
// a broker where a subscriber drains them and then acknowledging it, next
// to a plain jetstream durable consumer (Messages, with nats.go's default
// of 500 messages ahead, as the import) decoding each, handing it to a
// channel that a goroutine drains, and acknowledging it.
func BenchmarkStreamImport(b *testing.B) {
	ts := startBenchServer(b)
	data, _ := json.Marshal(benchTick)
	b.Run("bridge", func(b *testing.B) {
		admin := connect(b, ts)
		subject := benchStream(b, admin)
		preload(b, admin, subject, data, benchWarmup+b.N)
		n := newNode(b, ts)
		w := newWindow(0)
		w.diag = consumerState(admin, subject)
		ch, cancel := n.b.Subscribe(topic.Buffer[natsbridge.Imported[Tick]](importBuffer))
		b.Cleanup(cancel)
		drain(b, ch, w)
		imp := linked(b)(n.br.ImportStream[Tick](b.Context(), subject, natsbridge.Stream{},
			natsbridge.Consumer{Durable: "bench", Start: natsbridge.StartEarliest()}))
		runConsume(b, w)
		checkConsumed(b, imp, func(s natsbridge.Stats) uint64 { return s.Received })
	})
	b.Run("nats", func(b *testing.B) {
		admin := connect(b, ts)
		subject := benchStream(b, admin)
		preload(b, admin, subject, data, benchWarmup+b.N)
		w := newWindow(0)
		w.diag = consumerState(admin, subject)
		ch := make(chan Tick, importBuffer)
		drain(b, ch, w)
		consumeLoop(b, plainConsumer(b, connect(b, ts), subject, 0), func(m jetstream.Msg) {
			var v Tick
			if err := json.Unmarshal(m.Data(), &v); err != nil {
				b.Error(err)
				_ = m.Term()
				return
			}
			ch <- v
			if err := m.Ack(); err != nil {
				b.Error(err)
			}
		})
		runConsume(b, w)
	})
}

// BenchmarkHandleStream handles the messages of a memory stream preloaded
// with JSON messages, with a function that counts them and returns nil:
// HandleStream, next to a plain jetstream durable consumer (Messages, with
// DefaultHandlePending messages ahead, as HandleStream) decoding each,
// calling the function and acknowledging the message.
func BenchmarkHandleStream(b *testing.B) {
	ts := startBenchServer(b)
	data, _ := json.Marshal(benchTick)
	b.Run("bridge", func(b *testing.B) {
		admin := connect(b, ts)
		subject := benchStream(b, admin)
		preload(b, admin, subject, data, benchWarmup+b.N)
		n := newNode(b, ts)
		w := newWindow(0)
		w.diag = consumerState(admin, subject)
		h := linked(b)(n.br.HandleStream(b.Context(), subject, natsbridge.Stream{},
			natsbridge.Consumer{Durable: "bench", Start: natsbridge.StartEarliest()},
			func(_ context.Context, r natsbridge.Imported[Tick]) error {
				w.release()
				return nil
			}))
		runConsume(b, w)
		checkConsumed(b, h, func(s natsbridge.Stats) uint64 { return s.Handled })
	})
	b.Run("nats", func(b *testing.B) {
		admin := connect(b, ts)
		subject := benchStream(b, admin)
		preload(b, admin, subject, data, benchWarmup+b.N)
		w := newWindow(0)
		w.diag = consumerState(admin, subject)
		f := func(_ context.Context, v Tick) error {
			w.release()
			return nil
		}
		ctx := b.Context()
		consumeLoop(b, plainConsumer(b, connect(b, ts), subject, natsbridge.DefaultHandlePending), func(m jetstream.Msg) {
			var v Tick
			if err := json.Unmarshal(m.Data(), &v); err != nil {
				b.Error(err)
				_ = m.Term()
				return
			}
			var err error
			if f(ctx, v) == nil {
				err = m.Ack()
			} else {
				err = m.Nak()
			}
			if err != nil {
				b.Error(err)
			}
		})
		runConsume(b, w)
	})
}
