package natsbridge

import (
	"reflect"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// An Imported is a value an import received, as it publishes it on the broker:
// the decoded value and where it came from.
//
// Imports publish Imported values, never bare values, so that an export of T, in
// this process or any other, never sees and sends again what an import
// received. A subscriber that wants plain values subscribes to T with
// topic.From(Unwrap[T]), and then receives both the local values and the
// imported ones.
type Imported[T any] struct {
	// Offset is the message's stream sequence, for a stream import: it
	// only grows along a stream, and ImportStream can start from it again
	// (At). Zero for a core NATS import.
	Offset uint64
	// Time is when the stream stored the message, for a stream import;
	// zero for a core NATS import.
	Time time.Time
	// Subject is the subject the message was published on.
	Subject string
	// Delivered counts the deliveries of this message to the consumer, for
	// a durable stream import: more than one means a redelivery. Zero
	// otherwise.
	Delivered uint64
	Value     T
}

// imported marks the Imported values, for exports of interface types.
func (Imported[T]) imported() {}

// An importedValue is an Imported value of any type.
type importedValue interface{ imported() }

// Unwrap returns r's value and true: as a From function, it makes a
// subscription to T receive the imported values too.
//
//	ch, cancel := b.Subscribe(topic.From(natsbridge.Unwrap[Order]))
func Unwrap[T any](r Imported[T]) (T, bool) { return r.Value, true }

// Import publishes on the bridge's broker, as an Imported[T], every message
// received on subject from core NATS, decoded by the codec (JSON without
// WithCodec). An empty subject means DefaultSubject[T](); the subject may
// hold wildcards (* for a token, > at the end for the rest). A subject with
// an empty token or white space is refused with an error wrapping
// ErrSubject.
//
// Import returns once the server has the subscription, if the connection is
// up: from then on, what is published on subject reaches the import. One
// goroutine receives the messages, in the order of the subscription,
// and publishes each before the next; a message that fails to decode is
// counted (DecodeErrors), reported to Config.OnError, and skipped. Between
// NATS and that goroutine, nats.go holds up to Pending messages
// (DefaultPending); beyond that it drops them, counted as Dropped and
// reported as a SlowConsumer Error. The broker's own delivery is the
// broker's: a subscription whose buffer is full loses the Imported value, counted
// there.
//
// Core NATS is at most once: see the package documentation. On a connection
// with NoEcho (see ConnectOptions) the import never receives what the same
// connection exported; without it, it skips what carries this bridge's
// OriginHeader, counted as Echoes.
func (br *Bridge) Import[T any](subject string, opts ...Option[T]) (*Link, error) {
	c := configure(opts)
	c.refuse("Import", "HandlerOptions", "Async", "Redeliver", "DeadLetterTo")
	subject, err := subjectOf(subject, reflect.TypeFor[T](), true)
	if err != nil {
		return nil, err
	}
	if c.pending <= 0 {
		c.pending = DefaultPending
	}
	l := &Link{br: br, subject: subject, kind: "import", input: true}
	x := &importer[T]{l: l, codec: c.codec, msgs: make(chan *nats.Msg, c.pending), done: make(chan struct{})}
	sub, err := br.nc.ChanSubscribe(subject, x.msgs)
	if err != nil {
		return nil, err
	}
	// nats.go calls the closed handler when the subscription ends, with
	// the subscription's lock held or after marking it closed: it never
	// sends on msgs again. That ends the goroutine, whoever ends the
	// subscription: Stop, or the connection's closing.
	sub.SetClosedHandler(func(string) { x.closeMsgs() })
	if !sub.IsValid() {
		x.closeMsgs() // ended before the handler was set
	}
	x.sub = sub
	l.dropped = x.refreshDropped
	l.stop = x.stop
	br.mu.Lock()
	br.subs[sub] = l
	br.mu.Unlock()
	go x.run()
	if _, err := br.register(l); err != nil {
		return nil, err
	}
	// Once the server has the subscription, what is published after Import
	// returns reaches it: wait for that, if connected. Disconnected, nats.go
	// subscribes again when it reconnects.
	if br.nc.IsConnected() {
		_ = br.nc.FlushTimeout(br.cfg.AckTimeout)
	}
	return l, nil
}

// importer is a core NATS import of values of type T.
type importer[T any] struct {
	l     *Link
	codec Codec[T]
	sub   *nats.Subscription // never changes after Import
	msgs  chan *nats.Msg     // closed once, when the subscription ends
	once  sync.Once
	done  chan struct{} // closed when run returns
}

func (x *importer[T]) closeMsgs() { x.once.Do(func() { close(x.msgs) }) }

func (x *importer[T]) run() {
	defer close(x.done)
	for m := range x.msgs {
		x.receive(m)
	}
}

// receive publishes the value m holds.
func (x *importer[T]) receive(m *nats.Msg) {
	br := x.l.br
	if m.Header != nil && isOrigin(m.Header, br.origin) {
		x.l.counts.echoes.Add(1)
		return
	}
	v, err := decode(x.codec, m.Data)
	if err != nil {
		br.report(&x.l.counts, Decode, x.l.subject, err)
		return
	}
	// Counted first, so that whoever receives the value sees it counted.
	x.l.counts.received.Add(1)
	br.b.Publish(Imported[T]{Subject: m.Subject, Value: v})
}

// isOrigin reports whether h marks a message exported by origin.
func isOrigin(h nats.Header, origin string) bool {
	vs := h[OriginHeader]
	return len(vs) > 0 && vs[0] == origin
}

// refreshDropped reads the count of messages nats.go dropped. It can only
// be read while the subscription is valid: Stop reads it last just before
// unsubscribing.
func (x *importer[T]) refreshDropped() {
	if n, err := x.sub.Dropped(); err == nil {
		raise(&x.l.counts.dropped, uint64(n))
	}
}

func (x *importer[T]) stop() {
	x.refreshDropped()
	br := x.l.br
	br.mu.Lock()
	delete(br.subs, x.sub)
	br.mu.Unlock()
	// After Unsubscribe, or if it fails because the connection is closed,
	// the subscription has ended and the closed handler closed msgs.
	_ = x.sub.Unsubscribe()
	x.closeMsgs()
	<-x.done
}
