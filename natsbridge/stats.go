package natsbridge

import (
	"strconv"
	"sync/atomic"
)

// Stats counts what crossed a link, or a whole Bridge, and every failure.
// Each count only grows.
//
// A value an export loses before it reaches NATS is also counted by the
// broker, on the export's handler subscription (see topic.Broker.Subscriptions):
// a queue that overflowed as Full or Evicted, a value that failed to encode or
// publish as Errored (or dead-lettered, with topic.Retry).
type Stats struct {
	// Sent counts the values an export handed to NATS: published, for core
	// NATS; stored and acknowledged by the stream, for JetStream.
	Sent uint64
	// Received counts the messages an import decoded and published on the
	// broker.
	Received uint64
	// Echoes counts the messages an import skipped because this bridge sent
	// them (see the Loop prevention section of the package documentation).
	Echoes uint64
	// Duplicates counts the values a synchronous stream export sent again,
	// after an attempt whose acknowledgement was lost, that the stream had
	// stored already and did not store again (its message ID was within
	// the stream's duplicate window). Each is counted in Sent too. For a
	// stream handler, it counts the redeliveries of a message it had
	// handled or dead-lettered already (delivered again while it waited
	// behind a long call), acknowledged and skipped.
	Duplicates uint64

	// Handled counts the messages a stream handler's function handled
	// (acknowledged); Retried those it failed and the stream was asked to
	// deliver again; DeadLettered those it gave up, published as dead
	// letters and terminated (see HandleStream).
	Handled, Retried, DeadLettered uint64
	// Abandoned counts the messages a stream handler terminated at their
	// last attempt without a dead letter on NATS, because NATS refused
	// every publication of it (each refusal is in PublishErrors, and
	// reported): lost, and counted apart (see HandleStream).
	Abandoned uint64

	EncodeErrors  uint64 // values the codec could not encode, not sent
	DecodeErrors  uint64 // messages the codec could not decode, skipped
	PublishErrors uint64 // publications NATS or the stream refused or did not acknowledge (each attempt, when retried)
	AckErrors     uint64 // JetStream acknowledgements an import could not send
	ConsumeErrors uint64 // errors from a JetStream consumer (missed heartbeats, a deleted consumer, ...)

	// Dropped counts the messages nats.go dropped for an import that fell
	// behind (its pending channel was full): they were never decoded. Each
	// episode is also reported once, as a SlowConsumer Error.
	Dropped uint64
	// SlowConsumers counts the slow-consumer reports from nats.go; each
	// covers one or more dropped messages.
	SlowConsumers uint64

	// Disconnects and Reconnects count the connection's losses and
	// recoveries, for a Bridge; a link's are zero.
	Disconnects, Reconnects uint64
}

func (s *Stats) add(o Stats) {
	s.Sent += o.Sent
	s.Received += o.Received
	s.Echoes += o.Echoes
	s.Duplicates += o.Duplicates
	s.Handled += o.Handled
	s.Retried += o.Retried
	s.DeadLettered += o.DeadLettered
	s.Abandoned += o.Abandoned
	s.EncodeErrors += o.EncodeErrors
	s.DecodeErrors += o.DecodeErrors
	s.PublishErrors += o.PublishErrors
	s.AckErrors += o.AckErrors
	s.ConsumeErrors += o.ConsumeErrors
	s.Dropped += o.Dropped
	s.SlowConsumers += o.SlowConsumers
	s.Disconnects += o.Disconnects
	s.Reconnects += o.Reconnects
}

// counters are the atomic counts behind a Stats. Sent and received are
// added on the path of every value; the others on failures only.
type counters struct {
	sent, received, echoes, duplicates     atomic.Uint64
	handled, retried, deadLettered         atomic.Uint64
	abandoned                              atomic.Uint64
	encode, decode, publish, ack, consume  atomic.Uint64
	dropped, slow, disconnects, reconnects atomic.Uint64
}

func (c *counters) load() Stats {
	return Stats{
		Sent:          c.sent.Load(),
		Received:      c.received.Load(),
		Echoes:        c.echoes.Load(),
		Duplicates:    c.duplicates.Load(),
		Handled:       c.handled.Load(),
		Retried:       c.retried.Load(),
		DeadLettered:  c.deadLettered.Load(),
		Abandoned:     c.abandoned.Load(),
		EncodeErrors:  c.encode.Load(),
		DecodeErrors:  c.decode.Load(),
		PublishErrors: c.publish.Load(),
		AckErrors:     c.ack.Load(),
		ConsumeErrors: c.consume.Load(),
		Dropped:       c.dropped.Load(),
		SlowConsumers: c.slow.Load(),
		Disconnects:   c.disconnects.Load(),
		Reconnects:    c.reconnects.Load(),
	}
}

// of returns the counter of failures of kind op.
func (c *counters) of(op Op) *atomic.Uint64 {
	switch op {
	case Encode:
		return &c.encode
	case Decode:
		return &c.decode
	case Publish:
		return &c.publish
	case Ack:
		return &c.ack
	case Consume:
		return &c.consume
	case SlowConsumer:
		return &c.slow
	case Disconnect:
		return &c.disconnects
	}
	return nil
}

// An Op says what failed.
type Op uint8

const (
	// Encode: the codec failed to encode a value; it was not sent.
	Encode Op = iota + 1
	// Decode: the codec failed to decode a message, or its headers were
	// malformed; it was skipped (and, from a durable JetStream consumer,
	// terminated, so that it is not redelivered).
	Decode
	// Publish: NATS refused a value (the connection is closed, or its
	// reconnect buffer is full), or the stream did not acknowledge it.
	Publish
	// Ack: an import could not acknowledge a JetStream message; the stream
	// will deliver it again.
	Ack
	// Consume: a JetStream consumer reported an error, or ended.
	Consume
	// SlowConsumer: nats.go dropped messages for a subscription that fell
	// behind; Stats.Dropped counts them.
	SlowConsumer
	// Disconnect: the connection to the server was lost. nats.go
	// reconnects on its own (see the package documentation); until it does,
	// core NATS publications are buffered and may be lost.
	Disconnect
)

func (o Op) String() string {
	switch o {
	case Encode:
		return "encode"
	case Decode:
		return "decode"
	case Publish:
		return "publish"
	case Ack:
		return "ack"
	case Consume:
		return "consume"
	case SlowConsumer:
		return "slow consumer"
	case Disconnect:
		return "disconnect"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// An Error reports one failure to Config.OnError. It is also what an
// export's handler function returns for a value it could not send, so the
// broker's loss report for that value (topic.Loss.Err) holds it.
type Error struct {
	Op      Op
	Subject string // the link's subject; empty for the connection's errors
	Err     error  // the cause, from the codec, nats.go or the server; may be nil for a Disconnect
}

func (e *Error) Error() string {
	s := "natsbridge: " + e.Op.String()
	if e.Subject != "" {
		s += " " + e.Subject
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
