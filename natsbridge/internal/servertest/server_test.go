package servertest_test

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

// A testServer is an embedded nats-server on a random loopback port, with
// JetStream on, its store in a test's temporary folder and its memory and
// disk bounded (unbounded, it sizes itself from the host).
type testServer struct {
	tb   testing.TB
	opts server.Options
	s    *server.Server
}

// startServer starts a testServer, its options changed by each of opts.
func startServer(tb testing.TB, opts ...func(*server.Options)) *testServer {
	tb.Helper()
	ts := &testServer{tb: tb, opts: server.Options{
		Host:               "127.0.0.1",
		Port:               server.RANDOM_PORT,
		NoLog:              true,
		NoSigs:             true,
		JetStream:          true,
		StoreDir:           tb.TempDir(),
		JetStreamMaxMemory: 64 << 20,
		JetStreamMaxStore:  256 << 20,
	}}
	for _, o := range opts {
		o(&ts.opts)
	}
	ts.start()
	tb.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) start() {
	ts.tb.Helper()
	opts := ts.opts // the server keeps and changes its options
	s, err := server.NewServer(&opts)
	if err != nil {
		ts.tb.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		ts.tb.Fatal("nats-server not ready")
	}
	ts.s = s
	ts.opts.Port = s.Addr().(*net.TCPAddr).Port
}

func (ts *testServer) stop() {
	if ts.s != nil {
		ts.s.Shutdown()
		ts.s.WaitForShutdown()
		ts.s = nil
	}
}

// restart stops the server and starts it again on the same port and store.
func (ts *testServer) restart() {
	ts.tb.Helper()
	ts.stop()
	ts.start()
}

func (ts *testServer) url() string { return ts.s.ClientURL() }

// connect connects to ts with the bridge's recommended options, reconnecting
// quickly, then opts.
func connect(tb testing.TB, ts *testServer, opts ...nats.Option) *nats.Conn {
	tb.Helper()
	all := append(natsbridge.ConnectOptions(),
		nats.ReconnectWait(20*time.Millisecond),
		nats.ReconnectJitter(0, 0),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}), // not nats.go's default, which prints
	)
	nc, err := nats.Connect(ts.url(), append(all, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// A node is one process's side: a broker, a connection and a bridge.
type node struct {
	b      *topic.Broker
	nc     *nats.Conn
	br     *natsbridge.Bridge
	errors *errorLog
}

func newNode(tb testing.TB, ts *testServer, opts ...nats.Option) *node {
	tb.Helper()
	n := &node{b: new(topic.Broker), errors: new(errorLog)}
	n.nc = connect(tb, ts, opts...)
	n.br = natsbridge.New(n.b, n.nc, natsbridge.Config{OnError: n.errors.add, AckTimeout: 2 * time.Second})
	tb.Cleanup(n.br.Close)
	return n
}

// errorLog keeps what a bridge reported to OnError.
type errorLog struct {
	mu   sync.Mutex
	errs []*natsbridge.Error
}

func (l *errorLog) add(e *natsbridge.Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, e)
}

// count returns how many errors of kind op were reported.
func (l *errorLog) count(op natsbridge.Op) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.errs {
		if e.Op == op {
			n++
		}
	}
	return n
}

func (l *errorLog) first(op natsbridge.Op) *natsbridge.Error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.errs {
		if e.Op == op {
			return e
		}
	}
	return nil
}

// waitFor polls cond every few milliseconds until it holds or d passes.
func waitFor(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// recv receives one value from ch within d.
func recv[T any](tb testing.TB, ch <-chan T, d time.Duration) T {
	tb.Helper()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case v, ok := <-ch:
		if !ok {
			tb.Fatal("channel closed")
		}
		return v
	case <-t.C:
		var zero T
		tb.Fatalf("nothing received in %v", d)
		return zero
	}
}

// none checks that nothing arrives on ch for d.
func none[T any](tb testing.TB, ch <-chan T, d time.Duration) {
	tb.Helper()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case v, ok := <-ch:
		if ok {
			tb.Fatalf("unexpected %+v", v)
		}
	case <-t.C:
	}
}

// linked fails the test if a link could not be made.
func linked(tb testing.TB) func(*natsbridge.Link, error) *natsbridge.Link {
	return func(l *natsbridge.Link, err error) *natsbridge.Link {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return l
	}
}
