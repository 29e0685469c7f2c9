package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/seedaa7df82c/topic"
)

// DefaultMaxMsgs is the count bound of a stream that ExportStream or
// ImportStream creates when Stream.MaxMsgs is zero.
const DefaultMaxMsgs = 1_000_000

// Stream names the JetStream stream of a stream export or import, and the
// bounds it is created with if no stream stores the subject yet. The zero
// Stream is valid.
//
// If a stream already stores the subject, it is used as it is: its name and
// bounds win over these, which only shape a stream the bridge creates.
type Stream struct {
	// Name of the stream to create; empty means one derived from the
	// subject, each character outside [A-Za-z0-9_-] made '_'
	// (orders.eu → orders_eu).
	Name string
	// MaxMsgs bounds the messages kept: the oldest go first. Zero means
	// DefaultMaxMsgs; a negative count, no bound.
	MaxMsgs int64
	// MaxAge bounds the age of the messages kept; zero means no bound.
	MaxAge time.Duration
	// MaxBytes bounds the bytes kept; zero means no bound.
	MaxBytes int64
	// Memory stores the stream in the server's memory instead of on disk.
	Memory bool
	// Replicas is the stream's replica count in a cluster; zero means one.
	Replicas int
}

func (s Stream) config(subject string) jetstream.StreamConfig {
	c := jetstream.StreamConfig{
		Name:      s.Name,
		Subjects:  []string{subject},
		Retention: jetstream.LimitsPolicy,
		Discard:   jetstream.DiscardOld,
		MaxMsgs:   s.MaxMsgs,
		MaxAge:    s.MaxAge,
		MaxBytes:  s.MaxBytes,
		Storage:   jetstream.FileStorage,
		Replicas:  max(s.Replicas, 1),
	}
	if c.Name == "" {
		c.Name = streamName(subject)
	}
	switch {
	case c.MaxMsgs == 0:
		c.MaxMsgs = DefaultMaxMsgs
	case c.MaxMsgs < 0:
		c.MaxMsgs = -1
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = -1
	}
	if s.Memory {
		c.Storage = jetstream.MemoryStorage
	}
	return c
}

// ensureStream returns the stream that stores subject, creating it from s
// if there is none.
func (br *Bridge) ensureStream(ctx context.Context, js jetstream.JetStream, subject string, s Stream) (jetstream.Stream, error) {
	name, err := js.StreamNameBySubject(ctx, subject)
	if err == nil {
		return js.Stream(ctx, name)
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, err
	}
	cfg := s.config(subject)
	st, err := js.CreateStream(ctx, cfg)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return js.Stream(ctx, cfg.Name) // created meanwhile, by another process
	}
	return st, err
}

// DefaultRetry is how a synchronous stream export retries a value the
// stream did not acknowledge, unless HandlerOptions gives another topic.Retry:
// up to 10 attempts, backing off from 100ms to 2s. A value that fails them
// all is published on the broker as a topic.DeadLetter[T].
var DefaultRetry = topic.RetryPolicy{Attempts: 10, Base: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.2}

// ExportStream is Export into a JetStream stream: every value of type T
// published on the broker is stored in the stream that stores subject,
// created from s if there is none. The subject rules are those of Export;
// ctx bounds the stream's lookup and creation.
//
// Each message carries the bridge's OriginHeader. By default the export's
// goroutine waits for the stream's acknowledgement of each value before it
// sends the next (a synchronous publish), and is at least once: a value the
// stream does not acknowledge within Config.AckTimeout is counted as a
// PublishError and retried under DefaultRetry, or the topic.Retry given
// with HandlerOptions, and dead-lettered if it fails every attempt (see
// topic.Broker.Handle). Every attempt at one value carries the same message
// ID (the Nats-Msg-Id header: the bridge's Origin, '-', and the value's
// number in the export), so that a retry after an attempt whose
// acknowledgement alone was lost is not stored twice: the stream
// acknowledges it as a duplicate (counted in Stats.Duplicates). That holds
// within the stream's duplicate window (its Duplicates setting, two minutes
// by default) from the first attempt: a retry later than that, a value
// published twice on the broker, and a value sent again by another process
// or after a restart are distinct messages. While it retries, the export's queue fills, and
// beyond DefaultBuffer values the broker drops them, counted as Full.
//
// With Async, the goroutine does not wait: up to Config.MaxAckPending
// publications await their acknowledgement in the background, and one that
// fails is counted as a PublishError, reported, and lost, since the
// handler has moved on: faster, and at most once. An Async export sends
// each value once, so its messages carry no ID.
func (br *Bridge) ExportStream[T any](ctx context.Context, subject string, s Stream, opts ...Option[T]) (*Link, error) {
	c := configure(opts)
	c.refuse("ExportStream", "Pending", "Redeliver", "DeadLetterTo")
	subject, err := subjectOf(subject, reflect.TypeFor[T](), false)
	if err != nil {
		return nil, err
	}
	js, err := br.jetStream()
	if err != nil {
		return nil, err
	}
	if _, err := br.ensureStream(ctx, js, subject, s); err != nil {
		return nil, err
	}
	l := &Link{br: br, subject: subject, kind: "stream export"}
	x := &streamExport[T]{l: l, js: js, codec: c.codec, subject: subject, hdr: br.hdr}
	if !c.async {
		if err := br.handle(l, x.handle, skipImported(append([]topic.Option[T]{topic.Retry[T](DefaultRetry)}, c.sub...))); err != nil {
			return nil, err
		}
		return br.register(l)
	}
	// Acknowledgements arrive on nats.go's goroutine with the message
	// alone: they find the export by subject.
	x.target = &asyncTarget{l: l}
	br.mu.Lock()
	if _, dup := br.async[subject]; dup {
		br.mu.Unlock()
		return nil, fmt.Errorf("natsbridge: an Async stream export to %s exists already", subject)
	}
	br.async[subject] = x.target
	br.mu.Unlock()
	if err := br.handle(l, x.handleAsync, skipImported(c.sub)); err != nil {
		br.forgetAsync(subject)
		return nil, err
	}
	stopHandler := l.stop
	l.stop = func() {
		stopHandler()
		x.target.pending.Wait() // each resolves: acked, failed or timed out
		br.forgetAsync(subject)
	}
	return br.register(l)
}

func (br *Bridge) forgetAsync(subject string) {
	br.mu.Lock()
	delete(br.async, subject)
	br.mu.Unlock()
}

// streamExport is a JetStream export of values of type T. Never changes
// after ExportStream, but for seq and id.
type streamExport[T any] struct {
	l       *Link
	js      jetstream.JetStream
	codec   Codec[T]
	subject string
	hdr     nats.Header
	target  *asyncTarget // Async only
	// seq numbers the values the export sent, and id is the message ID of
	// the last one: the bridge's origin and seq. The handler's goroutine
	// alone uses them.
	seq uint64
	id  string
}

// handle publishes v and waits for its acknowledgement. Every attempt at
// one value carries the same message ID (a retry is known by
// topic.Attempt), so that the stream stores it once if an earlier attempt
// was stored but its acknowledgement lost.
func (x *streamExport[T]) handle(ctx context.Context, v T) error {
	if topic.Attempt(ctx) <= 1 || x.id == "" {
		x.seq++
		x.id = x.l.br.origin + "-" + strconv.FormatUint(x.seq, 10)
	}
	data, err := encode(x.codec, v)
	if err != nil {
		return topic.Permanent(x.l.br.report(&x.l.counts, Encode, x.subject, err))
	}
	// A header of its own: nats.go reads it while another value is built.
	h := nats.Header{OriginHeader: x.hdr[OriginHeader], jetstream.MsgIDHeader: []string{x.id}}
	// ctx has no deadline: the JetStream context applies AckTimeout.
	ack, err := x.js.PublishMsg(ctx, &nats.Msg{Subject: x.subject, Data: data, Header: h})
	if err != nil {
		return publishFailed(x.l.br.report(&x.l.counts, Publish, x.subject, err))
	}
	if ack.Duplicate {
		x.l.counts.duplicates.Add(1) // stored by an attempt whose ack was lost
	}
	x.l.counts.sent.Add(1)
	return nil
}

// handleAsync publishes v; its acknowledgement is counted when it comes.
func (x *streamExport[T]) handleAsync(_ context.Context, v T) error {
	data, err := encode(x.codec, v)
	if err != nil {
		return topic.Permanent(x.l.br.report(&x.l.counts, Encode, x.subject, err))
	}
	x.target.pending.Add(1)
	if _, err := x.js.PublishMsgAsync(&nats.Msg{Subject: x.subject, Data: data, Header: x.hdr}); err != nil {
		x.target.pending.Done()
		return x.l.br.report(&x.l.counts, Publish, x.subject, err)
	}
	return nil
}

// asyncTarget is where the acknowledgements of an Async export go.
type asyncTarget struct {
	l *Link
	// pending counts the publications awaiting their acknowledgement.
	// Added to only by the export's handler goroutine, so Stop may wait
	// for it once the handler has ended.
	pending sync.WaitGroup
}

func (br *Bridge) targetOf(m *nats.Msg) *asyncTarget {
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.async[m.Subject]
}

func (br *Bridge) asyncAck(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
	if t := br.targetOf(m); t != nil {
		t.l.counts.sent.Add(1)
		t.pending.Done()
	}
}

func (br *Bridge) asyncErr(_ jetstream.JetStream, m *nats.Msg, err error) {
	if t := br.targetOf(m); t != nil {
		br.report(&t.l.counts, Publish, t.l.subject, err)
		t.pending.Done()
		return
	}
	br.report(&br.counts, Publish, m.Subject, err)
}

// A StreamStart says where a new consumer of a stream import starts, in
// the stream's sequence: StartNew, StartLast, StartAt, StartSince or
// StartEarliest (JetStream's deliver policies). The zero StreamStart is
// StartNew.
type StreamStart struct {
	kind startKind
	seq  uint64
	t    time.Time
}

type startKind uint8

const (
	startNext startKind = iota
	startLast
	startAt
	startSince
	startEarliest
)

// StartNew starts with the next message stored: no replay.
func StartNew() StreamStart { return StreamStart{} }

// StartLast starts with the last n messages the stream keeps, or all of
// them if it keeps fewer. It counts the stream's messages, so on a stream
// shared with other subjects it may deliver fewer than n of the import's
// subject. StartLast(0) is StartNew().
func StartLast(n int) StreamStart {
	if n <= 0 {
		return StreamStart{}
	}
	return StreamStart{kind: startLast, seq: uint64(n)}
}

// StartAt starts at stream sequence seq (an Imported value's Offset): a
// sequence the stream no longer keeps starts at the oldest it keeps.
func StartAt(seq uint64) StreamStart { return StreamStart{kind: startAt, seq: max(seq, 1)} }

// StartSince starts with the first message stored at or after t.
func StartSince(t time.Time) StreamStart { return StreamStart{kind: startSince, t: t} }

// StartEarliest starts at the oldest message the stream keeps.
func StartEarliest() StreamStart { return StreamStart{kind: startEarliest} }

// Consumer says how a stream import consumes its stream.
type Consumer struct {
	// Durable names a durable consumer: the stream remembers what it has
	// acknowledged, so an import that stops, or a process that restarts,
	// resumes where it left off. An existing durable consumer resumes and
	// ignores Start. Empty means an ordered consumer: the client's alone,
	// gone with the import, starting at Start each time.
	//
	// A durable name allows no '.', '*', '>', path separator or white
	// space. Two imports with the same durable name share its messages.
	Durable string
	// Start is where a new consumer starts; the zero StreamStart is
	// StartNew.
	Start StreamStart
	// AckWait is how long the stream waits for a durable consumer's
	// acknowledgement before it delivers a message again. Zero means the
	// server's default, 30s.
	AckWait time.Duration
	// MaxAckPending bounds a durable consumer's messages delivered and not
	// yet acknowledged. Zero means the server's default, 1000.
	MaxAckPending int
}

// ImportStream is Import from a JetStream stream: every message of the
// stream that stores subject (created from s if there is none) whose
// subject matches is decoded and published on the broker as an Imported[T]
// carrying its stream sequence as Offset. The subject may hold wildcards;
// ctx bounds the stream's and the consumer's lookup and creation.
//
// With a durable consumer (Consumer.Durable), each message is acknowledged
// after it is published on the broker, so a message is lost to the import
// only once the broker had it: an import that stops or dies before that
// gets it again, from this process after a restart or from another. It is
// at least once, and a subscriber must tolerate duplicates (Imported.Delivered
// above one marks a redelivery; Imported.Offset identifies the message). A
// message that fails to decode is counted (DecodeErrors), reported, and
// terminated, so that it is never delivered again. What the broker does with
// the Imported is the broker's: a subscription whose buffer is full loses it,
// counted there, although the stream counts it as delivered.
//
// With an ordered consumer, messages are delivered in stream order without
// acknowledgement, and the consumer recovers on its own from a gap or a
// reconnect; a new import starts again at Start.
//
// Messages that carry this bridge's OriginHeader are skipped, counted as
// Echoes (and acknowledged).
func (br *Bridge) ImportStream[T any](ctx context.Context, subject string, s Stream, c Consumer, opts ...Option[T]) (*Link, error) {
	cf := configure(opts)
	cf.refuse("ImportStream", "HandlerOptions", "Async", "Redeliver", "DeadLetterTo")
	subject, err := subjectOf(subject, reflect.TypeFor[T](), true)
	if err != nil {
		return nil, err
	}
	js, err := br.jetStream()
	if err != nil {
		return nil, err
	}
	st, err := br.ensureStream(ctx, js, subject, s)
	if err != nil {
		return nil, err
	}
	var cons jetstream.Consumer
	if c.Durable != "" {
		cons, err = br.durable(ctx, st, subject, c)
	} else {
		policy, seq, t, perr := startOf(ctx, st, c.Start)
		if perr != nil {
			return nil, perr
		}
		cons, err = st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{subject},
			DeliverPolicy:  policy,
			OptStartSeq:    seq,
			OptStartTime:   t,
		})
	}
	if err != nil {
		return nil, err
	}
	mopts := []jetstream.PullMessagesOpt{pullExpiry}
	if cf.pending > 0 {
		mopts = append(mopts, jetstream.PullMaxMessages(cf.pending))
	}
	it, err := cons.Messages(mopts...)
	if err != nil {
		return nil, err
	}
	l := &Link{br: br, subject: subject, kind: "stream import", input: true}
	x := &streamImport[T]{l: l, codec: cf.codec, it: it, durable: c.Durable != "", done: make(chan struct{})}
	l.stop = x.stop
	go x.run()
	return br.register(l)
}

// pullExpiry bounds each pull request of a stream import or handler to 5 s
// (nats.go's default is 30 s), and so its heartbeats to 2.5 s: a pull that
// the server lost (nats.go issue 1622: the client thinks a pull is
// outstanding, the server has none) is noticed after two missed heartbeats,
// 5 s, rather than 30.
const pullExpiry = jetstream.PullExpiry(5 * time.Second)

// durable returns the durable consumer c names, creating it if absent.
func (br *Bridge) durable(ctx context.Context, st jetstream.Stream, subject string, c Consumer) (jetstream.Consumer, error) {
	cons, err := st.Consumer(ctx, c.Durable)
	if err == nil || !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return cons, err
	}
	policy, seq, t, err := startOf(ctx, st, c.Start)
	if err != nil {
		return nil, err
	}
	cons, err = st.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       c.Durable,
		FilterSubject: subject,
		DeliverPolicy: policy,
		OptStartSeq:   seq,
		OptStartTime:  t,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.AckWait,
		MaxAckPending: c.MaxAckPending,
	})
	if errors.Is(err, jetstream.ErrConsumerExists) {
		return st.Consumer(ctx, c.Durable) // created meanwhile, by another process
	}
	return cons, err
}

// startOf translates s into a JetStream deliver policy.
func startOf(ctx context.Context, st jetstream.Stream, s StreamStart) (jetstream.DeliverPolicy, uint64, *time.Time, error) {
	switch s.kind {
	case startLast:
		info, err := st.Info(ctx)
		if err != nil {
			return 0, 0, nil, err
		}
		last, first := info.State.LastSeq, info.State.FirstSeq
		seq := first
		if last >= s.seq && last-s.seq+1 > first {
			seq = last - s.seq + 1
		}
		return jetstream.DeliverByStartSequencePolicy, max(seq, 1), nil, nil
	case startAt:
		return jetstream.DeliverByStartSequencePolicy, s.seq, nil, nil
	case startSince:
		t := s.t
		return jetstream.DeliverByStartTimePolicy, 0, &t, nil
	case startEarliest:
		return jetstream.DeliverAllPolicy, 0, nil, nil
	}
	return jetstream.DeliverNewPolicy, 0, nil, nil
}

// streamImport is a JetStream import of values of type T.
type streamImport[T any] struct {
	l       *Link
	codec   Codec[T]
	it      jetstream.MessagesContext
	durable bool          // acknowledge each message
	done    chan struct{} // closed when run returns
}

func (x *streamImport[T]) run() {
	defer close(x.done)
	for {
		m, ok := nextMessage(x.l, x.it)
		if !ok {
			return
		}
		x.receive(m)
	}
}

// nextMessage returns the next message of the link's consumer, and false once its
// iterator is closed. It reports the errors it meets on the way as Consume
// errors of l: those of fetching, and the closing of the connection, which
// ends the iterator; a stop, which closes the iterator too, is no error.
func nextMessage(l *Link, it jetstream.MessagesContext) (jetstream.Msg, bool) {
	for {
		m, err := it.Next()
		if err == nil {
			return m, true
		}
		closed := errors.Is(err, jetstream.ErrMsgIteratorClosed)
		if !closed || errors.Is(err, nats.ErrConnectionClosed) {
			l.br.report(&l.counts, Consume, l.subject, err)
		}
		if closed {
			return nil, false
		}
	}
}

// receive publishes the value m holds and acknowledges m.
func (x *streamImport[T]) receive(m jetstream.Msg) {
	br := x.l.br
	if h := m.Headers(); h != nil && isOrigin(h, br.origin) {
		x.l.counts.echoes.Add(1)
		x.settle(m, ack)
		return
	}
	meta, err := m.Metadata()
	if err != nil {
		br.report(&x.l.counts, Decode, x.l.subject, err)
		x.settle(m, term)
		return
	}
	v, err := decode(x.codec, m.Data())
	if err != nil {
		br.report(&x.l.counts, Decode, x.l.subject, err)
		x.settle(m, term)
		return
	}
	if br.down.Load() {
		// The broker has shut down: publishing would deliver nothing.
		// Have the stream deliver it again, to the next import.
		x.settle(m, nak)
		return
	}
	r := Imported[T]{Offset: meta.Sequence.Stream, Time: meta.Timestamp, Subject: m.Subject(), Value: v}
	if x.durable {
		r.Delivered = meta.NumDelivered
	}
	x.l.counts.received.Add(1) // first, as in importer.receive
	br.b.Publish(r)
	x.settle(m, ack)
}

// How an import settles a message with the stream.
type settlement uint8

const (
	ack  settlement = iota // done: do not deliver it again
	nak                    // deliver it again, now
	term                   // never deliver it again: it cannot be handled
)

// settle acknowledges m as s says, if the consumer is durable; an ordered
// consumer acknowledges nothing.
func (x *streamImport[T]) settle(m jetstream.Msg, s settlement) {
	if !x.durable {
		return
	}
	var err error
	switch s {
	case ack:
		err = m.Ack()
	case nak:
		err = m.Nak()
	case term:
		err = m.Term()
	}
	if err != nil {
		x.l.br.report(&x.l.counts, Ack, x.l.subject, err)
	}
}

// stop drains the iterator: Next returns what is buffered, then
// ErrMsgIteratorClosed. Draining asks the server to stop sending; with the
// server unreachable, or too slow to answer within AckTimeout, the
// iterator is stopped instead, at once: what it buffered and did not
// publish stays unacknowledged, for the stream to deliver again.
func (x *streamImport[T]) stop() { x.l.br.endMessages(x.it, x.done, x.l.br.cfg.AckTimeout) }

// endMessages ends the iterator it, whose reader closes done once Next has
// returned ErrMsgIteratorClosed: drained while the connection is up, for up
// to patience, else stopped at once; it returns once done is closed.
func (br *Bridge) endMessages(it jetstream.MessagesContext, done <-chan struct{}, patience time.Duration) {
	if br.nc.IsConnected() {
		it.Drain()
		select {
		case <-done:
			return
		case <-time.After(patience):
		}
	}
	it.Stop()
	<-done
}
