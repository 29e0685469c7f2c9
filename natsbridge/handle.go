package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/seedaa7df82c/topic"
)

// DefaultRedelivery is how HandleStream has the stream deliver again a
// message whose handling failed, unless Redeliver says otherwise: up to 10
// deliveries in all, the stream waiting from 100ms to 30s before each
// redelivery.
var DefaultRedelivery = topic.RetryPolicy{Attempts: 10, Base: 100 * time.Millisecond, Max: 30 * time.Second, Jitter: 0.2}

// DefaultHandlePending is how many messages HandleStream holds ahead of its
// function, unless Pending says otherwise. Their AckWait runs while they
// wait: a redelivery of one handled meanwhile is skipped, counted as a
// Duplicate, but fewer held means fewer such redeliveries behind a long
// call.
const DefaultHandlePending = 64

// Headers of the dead letters HandleStream publishes on NATS.
const (
	// DeadLetterErrorHeader holds the error of the last attempt.
	DeadLetterErrorHeader = "Natsbridge-Error"
	// DeadLetterAttemptsHeader holds the number of deliveries made.
	DeadLetterAttemptsHeader = "Natsbridge-Attempts"
	// DeadLetterStreamHeader and DeadLetterSequenceHeader hold the stream
	// and the stream sequence of the message.
	DeadLetterStreamHeader   = "Natsbridge-Stream"
	DeadLetterSequenceHeader = "Natsbridge-Stream-Sequence"
	// DeadLetterSubjectHeader holds the subject the message was stored on.
	DeadLetterSubjectHeader = "Natsbridge-Subject"
	// DeadLetterTruncatedHeader, on a dead letter whose data is the start of
	// the message's only (the message and the headers were more than the
	// server's max_payload), holds the size of the message's data.
	DeadLetterTruncatedHeader = "Natsbridge-Truncated"
)

// DeadLetterSubject returns the subject on which HandleStream publishes the
// dead letters of the durable consumer named durable, unless
// DeadLetterTo says otherwise: "natsbridge.deadletter." and the name.
func DeadLetterSubject(durable string) string { return "natsbridge.deadletter." + durable }

// HandleStream handles every message of the JetStream stream that stores
// subject (created from s if there is none) with f, at least once end to
// end: a message is acknowledged only once f has returned nil for it, so a
// process that dies, or a call that never returns, leaves it to the stream,
// which delivers it again (to this process after a restart, or to another
// consumer of the same durable name). The subject may hold wildcards; ctx
// bounds the lookups and creations.
//
// c.Durable is required: the consumer is durable, with explicit
// acknowledgements, created from c if absent (an existing one is used as it
// is, and c.Start is ignored). f receives each message decoded, with its
// stream sequence (Offset), storage time, subject and delivery count
// (Delivered: 1 the first time). One goroutine calls f, one message at a
// time, in the order the stream delivers them; run several HandleStream
// links with the same durable name to handle in parallel.
//
//   - nil: the message is acknowledged (Stats.Handled).
//   - an error: the stream is asked to deliver the message again after
//     the policy's back-off (a NAK with delay: Redeliver, DefaultRedelivery
//     without it), counted as Retried; meanwhile f handles the next ones.
//     A panic in f is such an error.
//   - a topic.Permanent error, or an error at the last attempt (the
//     message's Delivered count reaching the policy's Attempts, crashes
//     included): the message becomes a dead letter, published on the
//     broker as a topic.DeadLetter[T] and on NATS, then terminated, so
//     that the stream never delivers it again (Stats.DeadLettered).
//
// A dead letter on NATS is the message's data as stored, on the subject
// DeadLetterTo gives (DeadLetterSubject(c.Durable) without it), with the
// DeadLetter headers: the error, the attempts, the stream, sequence and
// subject of the message. If a stream stores that subject when
// HandleStream is called, dead letters are published through JetStream and
// acknowledged (a failed publication leaves the message to be delivered
// again); otherwise on core NATS, for whoever listens. A message that fails
// to decode (or whose codec panics) is counted (DecodeErrors), reported,
// dead-lettered on NATS alone, and terminated. When the message's data and
// the headers are more than the server's max_payload, the dead letter
// carries the start of the data and DeadLetterTruncatedHeader. When NATS
// refuses a dead letter, the message is delivered again after the
// back-off for its dead letter to be tried again, until its last attempt;
// then it is terminated all the same, lost, counted as Abandoned (each
// refusal counted in PublishErrors and reported), so that no message
// loops for ever.
//
// A call that takes long keeps its message: every third of the consumer's
// AckWait, the link tells the stream that the message is in progress, so
// that it is not delivered again meanwhile.
//
// Stop (and so Bridge.Close, and the broker's Shutdown, which stops the
// link as it begins) stops asking for messages, cancels f's context, and
// waits for the call in flight: its message is acknowledged if f returned
// nil, and otherwise delivered again at once, never dead-lettered (the
// failure may be the cancellation's). The messages the link held are
// delivered again at once too (a NAK), so that another consumer takes
// them. Nothing is lost by stopping: at worst handled twice.
//
// HandleStream does not skip the messages this bridge exported: a process
// may produce and consume one stream. Duplicates are the price of at least
// once: a message whose acknowledgement is lost, or whose handler's process
// dies after f returned, is handled again, its Delivered count above one.
// A crash can have at most the messages handled and not yet acknowledged
// handled again: at most the consumer's MaxAckPending (Consumer), and in
// practice the few acknowledgements in flight.
func (br *Bridge) HandleStream[T any](ctx context.Context, subject string, s Stream, c Consumer, f func(context.Context, Imported[T]) error, opts ...Option[T]) (*Link, error) {
	if f == nil {
		panic("natsbridge: HandleStream's function is nil")
	}
	cf := configure(opts)
	cf.refuse("HandleStream", "HandlerOptions", "Async")
	if c.Durable == "" {
		return nil, errors.New("natsbridge: HandleStream needs a durable consumer name (Consumer.Durable)")
	}
	subject, err := subjectOf(subject, reflect.TypeFor[T](), true)
	if err != nil {
		return nil, err
	}
	dlSubject := cf.deadLetters
	if dlSubject == "" {
		dlSubject = DeadLetterSubject(c.Durable)
	}
	if err := checkSubject(dlSubject, false); err != nil {
		return nil, err
	}
	if br.isClosed() {
		return nil, ErrClosed // before creating anything
	}
	js, err := br.jetStream()
	if err != nil {
		return nil, err
	}
	st, err := br.ensureStream(ctx, js, subject, s)
	if err != nil {
		return nil, err
	}
	cons, err := br.durable(ctx, st, subject, c)
	if err != nil {
		return nil, err
	}
	ackWait := cons.CachedInfo().Config.AckWait
	if ackWait <= 0 {
		ackWait = 30 * time.Second // the server's default
	}
	_, dlErr := js.StreamNameBySubject(ctx, dlSubject)
	pending := cf.pending
	if pending <= 0 {
		pending = DefaultHandlePending
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(pending), pullExpiry)
	if err != nil {
		return nil, err
	}
	policy := DefaultRedelivery
	if cf.redeliver != nil {
		policy = *cf.redeliver
	}
	l := &Link{br: br, subject: subject, kind: "stream handler", input: true}
	x := &streamHandler[T]{
		l: l, js: js, codec: cf.codec, it: it, f: f, policy: policy,
		name:      "natsbridge stream handler " + c.Durable,
		stream:    st.CachedInfo().Config.Name,
		dlSubject: dlSubject, dlStored: dlErr == nil,
		ackWait: ackWait,
		done:    make(chan struct{}), keeperDone: make(chan struct{}), quit: make(chan struct{}),
	}
	x.ctx, x.cancel = context.WithCancel(context.Background())
	l.stop = x.stop
	go x.keep()
	go x.run()
	return br.register(l)
}

// Redeliver sets the policy under which HandleStream has a message whose
// handling failed delivered again: p.Attempts deliveries in all, the
// stream waiting p.Delay(n) before redelivery n. Only for HandleStream.
func Redeliver[T any](p topic.RetryPolicy) Option[T] {
	if p.Attempts < 1 || p.Base < 0 || p.Max < 0 || p.Jitter < 0 || p.Jitter > 1 {
		panic(fmt.Sprintf("natsbridge: Redeliver policy %+v: Attempts must be at least 1, durations not negative, Jitter in [0, 1]", p))
	}
	return Option[T]{apply: func(c *config[T]) {
		c.mark("Redeliver")
		c.redeliver = &p
	}}
}

// DeadLetterTo sets the subject of HandleStream's dead letters on NATS: a
// subject with no wildcard. Only for HandleStream.
func DeadLetterTo[T any](subject string) Option[T] {
	return Option[T]{apply: func(c *config[T]) {
		c.mark("DeadLetterTo")
		c.deadLetters = subject
	}}
}

// streamHandler is a HandleStream link. Never changes after HandleStream.
type streamHandler[T any] struct {
	l         *Link
	js        jetstream.JetStream
	codec     Codec[T]
	it        jetstream.MessagesContext
	f         func(context.Context, Imported[T]) error
	policy    topic.RetryPolicy
	name      string // the Handler of its topic.DeadLetter values
	stream    string
	dlSubject string
	dlStored  bool // a stream stores dlSubject: publish dead letters through JetStream
	ackWait   time.Duration

	ctx    context.Context // f's: cancelled by stop
	cancel context.CancelFunc

	// finished holds the stream sequences of the last messages settled for
	// good (handled, dead-lettered), for run alone.
	finished recent

	// current is the message in f's hands, for keep; nil between calls.
	current atomic.Pointer[inFlight]

	stopping   atomic.Bool   // set by stop: the messages still held are NAKed, not handled
	quit       chan struct{} // closed by stop, for keep
	stopOnce   sync.Once
	done       chan struct{} // closed when run returns
	keeperDone chan struct{} // closed when keep returns
}

// inFlight is a message being handled, and since when.
type inFlight struct {
	m     jetstream.Msg
	since time.Time
}

func (x *streamHandler[T]) run() {
	defer close(x.done)
	for {
		m, ok := nextMessage(x.l, x.it)
		if !ok {
			return
		}
		if x.stopping.Load() {
			x.settle(m, nak, 0) // held when the link stopped: to the next consumer, now
			continue
		}
		x.handle(m)
	}
}

// handle calls f with the value m holds and settles m.
func (x *streamHandler[T]) handle(m jetstream.Msg) {
	br := x.l.br
	meta, err := m.Metadata()
	if err != nil {
		br.report(&x.l.counts, Decode, x.l.subject, err)
		x.settle(m, term, 0)
		return
	}
	seq := meta.Sequence.Stream
	if x.finished.has(seq) {
		// Delivered again while it was handled, from the link's buffer
		// (its AckWait ran out there): settled already.
		x.l.counts.duplicates.Add(1)
		x.settle(m, ack, 0)
		return
	}
	attempt := int(min(meta.NumDelivered, 1<<31-1))
	v, err := decode(x.codec, m.Data())
	if err != nil {
		e := br.report(&x.l.counts, Decode, x.l.subject, err)
		if x.deadLetter(m, meta, attempt, e) {
			x.settle(m, term, 0)
		} else if attempt >= x.policy.Attempts {
			x.abandon(m)
		}
		return
	}
	r := Imported[T]{Offset: meta.Sequence.Stream, Time: meta.Timestamp, Subject: m.Subject(), Delivered: meta.NumDelivered, Value: v}
	x.l.counts.received.Add(1)
	x.current.Store(&inFlight{m: m, since: time.Now()})
	err = x.call(r)
	x.current.Store(nil)
	var perm *topic.PermanentError
	switch {
	case err == nil:
		x.l.counts.handled.Add(1)
		x.finished.add(seq)
		x.settle(m, ack, 0)
	case x.stopping.Load():
		// Perhaps the cancellation's failure: for the next consumer.
		x.l.counts.retried.Add(1)
		x.settle(m, nak, 0)
	case errors.As(err, &perm) || attempt >= x.policy.Attempts:
		sent := x.deadLetter(m, meta, attempt, err)
		if !sent && attempt < x.policy.Attempts {
			return // delivered again, for its dead letter to be tried again
		}
		br.b.Publish(topic.DeadLetter[T]{Value: v, Err: err, Attempts: attempt, Handler: x.name})
		x.finished.add(seq)
		if sent {
			x.l.counts.deadLettered.Add(1)
			x.settle(m, term, 0)
		} else {
			x.abandon(m)
		}
	default:
		x.l.counts.retried.Add(1)
		x.settle(m, nak, x.policy.Delay(attempt))
	}
}

// call runs f with r, a panic returned as a *topic.PanicError.
func (x *streamHandler[T]) call(r Imported[T]) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &topic.PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	return x.f(x.ctx, r)
}

// deadLetter publishes m on the dead-letter subject, with the headers that
// say why, and reports whether it was sent (stored, if a stream stores the
// subject). If the message and the headers are more than the server takes,
// the dead letter carries the start of the data, and a header saying so. If
// it could not be sent, m is asked for again after the back-off, so that its
// dead letter is tried again, unless this was its last attempt: then the
// caller abandons it.
func (x *streamHandler[T]) deadLetter(m jetstream.Msg, meta *jetstream.MsgMetadata, attempt int, cause error) bool {
	h := nats.Header{
		DeadLetterErrorHeader:    []string{cause.Error()},
		DeadLetterAttemptsHeader: []string{strconv.Itoa(attempt)},
		DeadLetterStreamHeader:   []string{meta.Stream},
		DeadLetterSequenceHeader: []string{strconv.FormatUint(meta.Sequence.Stream, 10)},
		DeadLetterSubjectHeader:  []string{m.Subject()},
	}
	dl := &nats.Msg{Subject: x.dlSubject, Data: m.Data(), Header: h}
	if x.dlStored {
		// One dead letter per message, however often it is tried.
		h.Set(jetstream.MsgIDHeader, meta.Stream+"-"+strconv.FormatUint(meta.Sequence.Stream, 10))
	}
	err := x.publishDeadLetter(dl)
	if errors.Is(err, nats.ErrMaxPayload) {
		// The data and the headers are over max_payload (the message alone
		// was not): the start of the data, and its size in a header.
		x.l.br.report(&x.l.counts, Publish, x.dlSubject, err)
		h.Set(DeadLetterTruncatedHeader, strconv.Itoa(len(dl.Data)))
		headers := dl.Size() - len(dl.Subject) - len(dl.Reply) - len(dl.Data)
		keep := int(x.l.br.nc.MaxPayload()) - headers - truncateSlack
		dl.Data = dl.Data[:max(0, min(keep, len(dl.Data)))]
		err = x.publishDeadLetter(dl)
	}
	if err != nil {
		x.l.br.report(&x.l.counts, Publish, x.dlSubject, err)
		if attempt < x.policy.Attempts {
			x.settle(m, nak, x.policy.Delay(attempt))
		}
		return false
	}
	return true
}

// truncateSlack is what a truncated dead letter leaves under max_payload,
// for what JetStream may add to its headers.
const truncateSlack = 128

// publishDeadLetter publishes dl, through JetStream if a stream stores its
// subject.
func (x *streamHandler[T]) publishDeadLetter(dl *nats.Msg) error {
	if x.dlStored {
		_, err := x.js.PublishMsg(context.Background(), dl)
		return err
	}
	return x.l.br.nc.PublishMsg(dl)
}

// abandon terminates m, at its last attempt, without the dead letter NATS
// refused: lost, counted as Abandoned.
func (x *streamHandler[T]) abandon(m jetstream.Msg) {
	x.l.counts.abandoned.Add(1)
	x.settle(m, term, 0)
}

// settle acknowledges m as s says; a NAK waits delay before redelivery.
func (x *streamHandler[T]) settle(m jetstream.Msg, s settlement, delay time.Duration) {
	var err error
	switch s {
	case ack:
		err = m.Ack()
	case nak:
		if delay > 0 {
			err = m.NakWithDelay(delay)
		} else {
			err = m.Nak()
		}
	case term:
		err = m.Term()
	}
	if err != nil {
		x.l.br.report(&x.l.counts, Ack, x.l.subject, err)
	}
}

// keep tells the stream, every third of AckWait, that the message in f's
// hands for longer than that is in progress, so that it is not delivered
// again while f runs.
func (x *streamHandler[T]) keep() {
	defer close(x.keeperDone)
	every := max(x.ackWait/3, time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-x.quit:
			return
		case now := <-t.C:
			if c := x.current.Load(); c != nil && now.Sub(c.since) >= every {
				if err := c.m.InProgress(); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
					x.l.br.report(&x.l.counts, Ack, x.l.subject, err)
				}
			}
		}
	}
}

// stop ends the link: see HandleStream. The iterator is drained (or
// stopped at once, if the server is unreachable or slow to answer, as a
// stream import's); the call in flight finishes; what the iterator still
// hands out is NAKed.
func (x *streamHandler[T]) stop() {
	x.stopOnce.Do(func() {
		x.stopping.Store(true)
		x.cancel()
		x.l.br.endMessages(x.it, x.done, x.l.br.cfg.AckTimeout+x.ackWait)
		close(x.quit)
		<-x.keeperDone
	})
}

// recentSize is how many settled messages a stream handler remembers: more
// than it holds ahead (its Pending) by far.
const recentSize = 4096

// recent is a set of the last recentSize stream sequences added.
type recent struct {
	ring []uint64
	next int
	set  map[uint64]struct{}
}

func (r *recent) has(seq uint64) bool {
	_, ok := r.set[seq]
	return ok
}

func (r *recent) add(seq uint64) {
	if r.set == nil {
		r.ring, r.set = make([]uint64, recentSize), make(map[uint64]struct{}, recentSize)
	}
	if old := r.ring[r.next]; old != 0 {
		delete(r.set, old)
	}
	r.ring[r.next] = seq
	r.set[seq] = struct{}{}
	r.next = (r.next + 1) % recentSize
}
