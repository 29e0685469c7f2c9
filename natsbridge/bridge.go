package natsbridge

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/seedaa7df82c/topic"
)

// OriginHeader is the header that carries the origin of a message a bridge
// exports to JetStream, or to core NATS on a connection without NoEcho: the
// bridge's Origin. An import skips the messages that carry its own.
const OriginHeader = "Natsbridge-Origin"

// Defaults for Config, Option and Stream fields left zero.
const (
	// DefaultBuffer is the capacity of an export's queue on the broker.
	DefaultBuffer = 1024
	// DefaultPending is how many messages an import holds ahead of the
	// broker (see Pending).
	DefaultPending = 65536
	// DefaultAckTimeout bounds the wait for a JetStream acknowledgement.
	DefaultAckTimeout = 5 * time.Second
	// DefaultMaxAckPending bounds the asynchronous publications waiting for
	// their acknowledgement, per bridge.
	DefaultMaxAckPending = 4096
)

// ErrClosed is returned by Export and Import on a closed Bridge, or on one
// whose broker has shut down.
var ErrClosed = errors.New("natsbridge: bridge closed")

// Config configures a Bridge. The zero Config is valid.
type Config struct {
	// OnError, if set, is called with every failure, after it is counted.
	// It runs on the goroutine that saw the failure (an export's handler,
	// an import's, or nats.go's callback goroutine), possibly concurrently
	// with itself, so it must be safe for concurrent use and must not block
	// for long: the link it reports waits for it. It must not stop a link or
	// close the bridge.
	OnError func(*Error)
	// AckTimeout bounds the wait for a JetStream acknowledgement of an
	// exported value, and each JetStream request of ExportStream and
	// ImportStream made without a deadline. Zero means DefaultAckTimeout.
	AckTimeout time.Duration
	// MaxAckPending bounds the Async publications waiting for their
	// acknowledgement, all streams of the bridge together; an export that
	// reaches it waits up to 200ms for room, then counts the value as a
	// PublishError. Zero means DefaultMaxAckPending.
	MaxAckPending int
}

// A Bridge carries values of chosen types between one broker and one NATS
// connection, in both directions: see Export, Import, ExportStream and
// ImportStream.
//
// The Bridge does not own the connection: the application connects (see
// ConnectOptions), and closes or drains the connection after closing the
// Bridge. A Bridge must not be copied.
type Bridge struct {
	b      *topic.Broker
	nc     *nats.Conn
	cfg    Config
	origin string      // never changes
	hdr    nats.Header // {OriginHeader: origin}, shared by every message: nats.go only reads it (no publish options are given)
	echo   bool        // the connection echoes: exports to core NATS carry hdr too

	counts counters // the connection's: disconnects, reconnects, unattributed errors

	down      atomic.Bool   // set once the broker has shut down
	quit      chan struct{} // closed by Close
	watchDone chan struct{} // closed when the shutdown watcher ends
	closeOnce sync.Once

	mu      sync.Mutex
	closed  bool                         // set by Close or the broker's Shutdown; guarded by mu
	links   map[*Link]struct{}           // live links; guarded by mu
	subs    map[*nats.Subscription]*Link // core imports by subscription, for slow-consumer reports; guarded by mu
	retired Stats                        // the final counts of stopped links; guarded by mu
	js      jetstream.JetStream          // created on first use; guarded by mu
	async   map[string]*asyncTarget      // Async stream exports by subject; guarded by mu
}

// New returns a Bridge between b and nc.
//
// It chains its own handlers to nc's error, disconnect, reconnect and close
// handlers (those set before New still run, after the bridge's), to count
// and report disconnects and slow consumers. A goroutine waits, until
// Close, for b's Shutdown (topic.Broker.Done), which stops the bridge's
// links (see Close); the bridge adds nothing to b's Subscriptions but its
// links' handlers.
func New(b *topic.Broker, nc *nats.Conn, cfg Config) *Bridge {
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = DefaultAckTimeout
	}
	if cfg.MaxAckPending <= 0 {
		cfg.MaxAckPending = DefaultMaxAckPending
	}
	br := &Bridge{
		b:         b,
		nc:        nc,
		cfg:       cfg,
		origin:    newOrigin(),
		echo:      !nc.Opts.NoEcho,
		quit:      make(chan struct{}),
		watchDone: make(chan struct{}),
		links:     make(map[*Link]struct{}),
		subs:      make(map[*nats.Subscription]*Link),
		async:     make(map[string]*asyncTarget),
	}
	br.hdr = nats.Header{OriginHeader: []string{br.origin}}
	br.chainHandlers()

	go br.watch(b.Done())
	return br
}

func newOrigin() string {
	var id [8]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	return hex.EncodeToString(id[:])
}

// Origin returns the bridge's identity in the OriginHeader of what it
// exports: 16 random hexadecimal digits.
func (br *Bridge) Origin() string { return br.origin }

// watch stops the imports when the broker's Shutdown begins, and ends at
// Close. The exports are the broker's handlers: its drain sends what they
// hold and what its other handlers publish meanwhile, then ends them.
func (br *Bridge) watch(done <-chan struct{}) {
	defer close(br.watchDone)
	select {
	case <-done:
		br.down.Store(true)
		br.mu.Lock()
		br.closed = true
		br.mu.Unlock()
		br.stopLinks(func(l *Link) bool { return l.input })
	case <-br.quit:
	}
}

// Close stops every link of the bridge (see Link.Stop) and ends its
// goroutine. Export and Import then return ErrClosed. Close is idempotent:
// every call returns once all is stopped.
//
// Close does not close the connection: drain or close it after, to flush
// what core NATS exports left in nats.go's buffer. It composes with the
// broker's Shutdown either way round: Shutdown drains the exports' queues
// into NATS and stops the imports; Close then waits for what remains, such
// as the acknowledgements of Async stream exports.
func (br *Bridge) Close() {
	br.closeOnce.Do(func() {
		br.mu.Lock()
		br.closed = true
		br.mu.Unlock()
		close(br.quit)
		<-br.watchDone
		br.stopLinks(func(*Link) bool { return true })
	})
}

// stopLinks stops the live links that which selects.
func (br *Bridge) stopLinks(which func(*Link) bool) {
	br.mu.Lock()
	ls := make([]*Link, 0, len(br.links))
	for l := range br.links {
		if which(l) {
			ls = append(ls, l)
		}
	}
	br.mu.Unlock()
	for _, l := range ls {
		l.Stop()
	}
}

// Stats returns the counts of every link of the bridge, the stopped ones
// included, and of its connection. Counts are read atomically one by one.
func (br *Bridge) Stats() Stats {
	s := br.counts.load()
	br.mu.Lock()
	defer br.mu.Unlock()
	s.add(br.retired)
	for l := range br.links {
		s.add(l.Stats())
	}
	return s
}

// Links returns the live links of the bridge, in no particular order.
func (br *Bridge) Links() []*Link {
	br.mu.Lock()
	defer br.mu.Unlock()
	ls := make([]*Link, 0, len(br.links))
	for l := range br.links {
		ls = append(ls, l)
	}
	return ls
}

// register adds l, fully built, to the live links and returns it; or, if
// the bridge is closed, stops it and returns ErrClosed.
func (br *Bridge) register(l *Link) (*Link, error) {
	br.mu.Lock()
	closed := br.closed || br.brokerDown()
	if !closed {
		br.links[l] = struct{}{}
	}
	br.mu.Unlock()
	if closed {
		l.stop()
		return nil, ErrClosed
	}
	return l, nil
}

// isClosed reports whether the bridge is closed, or its broker's Shutdown
// has begun.
func (br *Bridge) isClosed() bool {
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.closed || br.brokerDown()
}

// brokerDown reports whether the broker's Shutdown has begun: known at
// once, where the watcher learns of it later.
func (br *Bridge) brokerDown() bool {
	select {
	case <-br.b.Done():
		return true
	default:
		return false
	}
}

// retire moves l from the live links to the retired counts.
func (br *Bridge) retire(l *Link) {
	br.mu.Lock()
	defer br.mu.Unlock()
	if _, ok := br.links[l]; ok {
		delete(br.links, l)
		br.retired.add(l.Stats())
	}
}

// report counts a failure of kind op on c and passes it to OnError.
func (br *Bridge) report(c *counters, op Op, subject string, err error) *Error {
	if n := c.of(op); n != nil {
		n.Add(1)
	}
	e := &Error{Op: op, Subject: subject, Err: err}
	if f := br.cfg.OnError; f != nil {
		f(e)
	}
	return e
}

// jetStream returns the bridge's JetStream context, made on first use.
func (br *Bridge) jetStream() (jetstream.JetStream, error) {
	br.mu.Lock()
	defer br.mu.Unlock()
	if br.js != nil {
		return br.js, nil
	}
	js, err := jetstream.New(br.nc,
		jetstream.WithDefaultTimeout(br.cfg.AckTimeout),
		jetstream.WithPublishAsyncTimeout(br.cfg.AckTimeout),
		jetstream.WithPublishAsyncMaxPending(br.cfg.MaxAckPending),
		jetstream.WithPublishAsyncAckHandler(br.asyncAck),
		jetstream.WithPublishAsyncErrHandler(br.asyncErr),
	)
	if err != nil {
		return nil, err
	}
	br.js = js
	return js, nil
}

// chainHandlers puts the bridge's connection handlers before those already
// set on the connection.
func (br *Bridge) chainHandlers() {
	nc := br.nc
	errH := nc.ErrorHandler()
	nc.SetErrorHandler(func(c *nats.Conn, s *nats.Subscription, err error) {
		br.asyncError(s, err)
		if errH != nil {
			errH(c, s, err)
		}
	})
	discH := nc.DisconnectErrHandler()
	nc.SetDisconnectErrHandler(func(c *nats.Conn, err error) {
		// nats.go calls this with a nil error when the application closes
		// the connection: not a failure.
		if err != nil {
			br.report(&br.counts, Disconnect, "", err)
		}
		if discH != nil {
			discH(c, err)
		}
	})
	recH := nc.ReconnectHandler()
	nc.SetReconnectHandler(func(c *nats.Conn) {
		br.counts.reconnects.Add(1)
		if recH != nil {
			recH(c)
		}
	})
	closedH := nc.ClosedHandler()
	nc.SetClosedHandler(func(c *nats.Conn) {
		br.mu.Lock()
		live := len(br.links) > 0
		br.mu.Unlock()
		if live {
			// Closed under live links: they end (see Link), and so
			// does whatever they would have carried.
			br.report(&br.counts, Disconnect, "", nats.ErrConnectionClosed)
		}
		if closedH != nil {
			closedH(c)
		}
	})
}

// asyncError handles nats.go's asynchronous errors: slow consumers above all.
func (br *Bridge) asyncError(s *nats.Subscription, err error) {
	br.mu.Lock()
	l := br.subs[s]
	br.mu.Unlock()
	c, subject := &br.counts, ""
	if l != nil {
		c, subject = &l.counts, l.subject
	}
	if errors.Is(err, nats.ErrSlowConsumer) {
		if l != nil && l.dropped != nil {
			l.dropped()
		} else if s != nil {
			if n, derr := s.Dropped(); derr == nil {
				raise(&c.dropped, uint64(n))
			}
		}
		br.report(c, SlowConsumer, subject, err)
		return
	}
	br.report(c, Consume, subject, err)
}

// raise sets n to v if v is larger.
func raise(n *atomic.Uint64, v uint64) {
	for {
		old := n.Load()
		if v <= old || n.CompareAndSwap(old, v) {
			return
		}
	}
}

// A Link is one export or import of a bridge.
type Link struct {
	br      *Bridge
	subject string // never changes
	kind    string // see Kind; never changes
	input   bool   // an import: it publishes on the broker; never changes
	counts  counters

	stop    func() // stops the link and waits for its goroutines; set before registration
	dropped func() // for a core import: refreshes counts.dropped from nats.go; else nil
	once    sync.Once
}

// Subject returns the subject the link exports to or imports from.
func (l *Link) Subject() string { return l.subject }

// Kind returns "export", "import", "stream export", "stream import" or
// "stream handler".
func (l *Link) Kind() string { return l.kind }

// Stats returns the link's counts. Counts are read atomically one by one.
func (l *Link) Stats() Stats {
	if l.dropped != nil {
		l.dropped()
	}
	return l.counts.load()
}

// Stop stops the link and waits for its goroutines to end.
//
// An export stops taking values from the broker at once, sends what its
// queue holds (unless topic.DiscardOnStop was given), and, for an Async
// stream export, waits for the acknowledgements still due (each bounded by
// Config.AckTimeout). A core import unsubscribes and publishes what it had
// received; a stream import stops asking for messages, publishes and
// acknowledges those it holds, and leaves the rest to the stream (a durable
// consumer resumes there). Stop is idempotent: every call returns once the
// link has stopped. It must not be called from Config.OnError.
func (l *Link) Stop() {
	l.once.Do(func() {
		l.stop()
		l.br.retire(l)
	})
}
