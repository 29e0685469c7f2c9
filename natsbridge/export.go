package natsbridge

import (
	"context"
	"errors"
	"reflect"

	"github.com/nats-io/nats.go"
	"github.com/seedaa7df82c/topic"
)

// Export sends every value of type T published on the bridge's broker to
// subject on core NATS, encoded by the codec (JSON without WithCodec). An
// empty subject means DefaultSubject[T](); a subject with an empty token, a
// wildcard or white space is refused with an error wrapping ErrSubject.
//
// The export is a handler subscription of the broker (topic.Broker.Handle),
// named "natsbridge export <subject>", with a queue of DefaultBuffer values
// unless HandlerOptions says otherwise: publishers never wait for NATS. Its
// goroutine encodes and publishes the values one at a time, in the order the
// subscription accepted them. A value the queue cannot take, or that fails
// to encode or publish, is counted by the broker as lost (Full, Errored) and
// by the link (EncodeErrors, PublishErrors), and reported to Config.OnError.
//
// Core NATS is at most once: see the package documentation. Export never
// sends what an import publishes, an Imported value: an Imported value is not a T, and an
// export of an interface type that an Imported value implements (any, for one)
// skips it.
func (br *Bridge) Export[T any](subject string, opts ...Option[T]) (*Link, error) {
	c := configure(opts)
	c.refuse("Export", "Pending", "Async", "Redeliver", "DeadLetterTo")
	subject, err := subjectOf(subject, reflect.TypeFor[T](), false)
	if err != nil {
		return nil, err
	}
	l := &Link{br: br, subject: subject, kind: "export"}
	x := &export[T]{l: l, nc: br.nc, codec: c.codec, subject: subject}
	if br.echo {
		x.hdr = br.hdr
	}
	if err := br.handle(l, x.handle, skipImported(c.sub)); err != nil {
		return nil, err
	}
	return br.register(l)
}

// handle makes f, under opts, l's handler subscription and its Stop.
func (br *Bridge) handle[T any](l *Link, f func(context.Context, T) error, opts []topic.Option[T]) error {
	hopts := append([]topic.Option[T]{
		topic.Buffer[T](DefaultBuffer),
		topic.Name[T]("natsbridge " + l.kind + " " + l.subject),
	}, opts...)
	br.mu.Lock()
	closed := br.closed || br.brokerDown()
	br.mu.Unlock()
	if closed {
		return ErrClosed
	}
	l.stop = br.b.Handle(f, hopts...)
	return nil
}

// skipImported puts before opts, if T is an interface type or the user gave
// options (which may hold From sources of interface types), a From source
// that rejects the Imported values imports publish, of any type: the first
// source that matches a value decides, so no source of the user's sees one.
// For a concrete T without options nothing is added: a T is never an
// Imported value unless T is one.
func skipImported[T any](opts []topic.Option[T]) []topic.Option[T] {
	if reflect.TypeFor[T]().Kind() != reflect.Interface && len(opts) == 0 {
		return opts
	}
	skip := topic.From(func(importedValue) (T, bool) {
		var zero T
		return zero, false
	})
	return append([]topic.Option[T]{skip}, opts...)
}

// export is a core NATS export of values of type T. Never changes.
type export[T any] struct {
	l       *Link
	nc      *nats.Conn
	codec   Codec[T]
	subject string
	hdr     nats.Header // the origin header if the connection echoes, else nil
}

// handle is the export's handler function: it sends v.
func (x *export[T]) handle(_ context.Context, v T) error {
	data, err := encode(x.codec, v)
	if err != nil {
		return topic.Permanent(x.l.br.report(&x.l.counts, Encode, x.subject, err))
	}
	if x.hdr == nil {
		err = x.nc.Publish(x.subject, data)
	} else {
		err = x.nc.PublishMsg(&nats.Msg{Subject: x.subject, Data: data, Header: x.hdr})
	}
	if err != nil {
		return publishFailed(x.l.br.report(&x.l.counts, Publish, x.subject, err))
	}
	x.l.counts.sent.Add(1)
	return nil
}

// publishFailed returns e, the error of a failed publication, as the export
// handler's error: permanent if the connection is closed or draining, so
// that the handler does not retry what can never be sent (see
// topic.Permanent).
func publishFailed(e *Error) error {
	if errors.Is(e, nats.ErrConnectionClosed) || errors.Is(e, nats.ErrConnectionDraining) {
		return topic.Permanent(e)
	}
	return e
}
