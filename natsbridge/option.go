package natsbridge

import "github.com/seedaa7df82c/topic"

// An Option configures one export or import of values of type T.
//
// The zero Option has no effect. Given more than once, the last option of a
// kind wins, except HandlerOptions, whose options add up in order. An option
// that does not apply to the link it is given to (Pending to an export,
// HandlerOptions or Async to an import, Redeliver or DeadLetterTo to
// anything but HandleStream) makes the call panic.
type Option[T any] struct {
	apply func(*config[T])
}

// config collects the options of one export or import.
type config[T any] struct {
	codec   Codec[T]
	sub     []topic.Option[T] // export: options of its handler subscription
	pending int               // import: messages held ahead of the broker
	async   bool              // stream export: publish without waiting for each ack
	// HandleStream: the redelivery policy and the dead-letter subject.
	redeliver   *topic.RetryPolicy
	deadLetters string
	used        map[string]bool // names of the options given, for misuse checks
}

func configure[T any](opts []Option[T]) config[T] {
	c := config[T]{codec: JSON[T]{}}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&c)
		}
	}
	return c
}

func (c *config[T]) mark(name string) {
	if c.used == nil {
		c.used = make(map[string]bool)
	}
	c.used[name] = true
}

// refuse panics if any of the named options was given to the call named op.
func (c *config[T]) refuse(op string, names ...string) {
	for _, n := range names {
		if c.used[n] {
			panic("natsbridge: " + n + " is not an option of " + op)
		}
	}
}

// WithCodec sets the codec of an export or import; without it, JSON. A nil
// c means JSON.
func WithCodec[T any](c Codec[T]) Option[T] {
	return Option[T]{apply: func(cf *config[T]) {
		if c == nil {
			c = JSON[T]{}
		}
		cf.codec = c
	}}
}

// HandlerOptions passes options to the handler subscription through which an
// export receives the broker's values of type T (see topic.Broker.Handle):
// topic.Buffer for its queue (DefaultBuffer without it), topic.Name for its
// row in topic.Broker.Subscriptions, topic.OnLoss to see each value it loses,
// topic.Overflow, topic.From, topic.Retry to retry a value whose publication
// failed, topic.DiscardOnStop. Given more than once, the options add up in
// order. Only for Export and ExportStream.
func HandlerOptions[T any](opts ...topic.Option[T]) Option[T] {
	return Option[T]{apply: func(c *config[T]) {
		c.mark("HandlerOptions")
		c.sub = append(c.sub, opts...)
	}}
}

// Pending sets how many messages an import holds between NATS and the
// broker: for core NATS, the capacity of its subscription's channel, beyond
// which nats.go drops messages, counted as Dropped and reported as a
// SlowConsumer Error; for JetStream, how many messages it asks for ahead
// (the server holds back the rest, so nothing is dropped). Zero or less
// means the default: DefaultPending for core NATS, nats.go's (500) for
// ImportStream, DefaultHandlePending for HandleStream. Only for Import,
// ImportStream and HandleStream.
func Pending[T any](n int) Option[T] {
	return Option[T]{apply: func(c *config[T]) {
		c.mark("Pending")
		c.pending = n
	}}
}

// Async makes a stream export publish without waiting for each
// acknowledgement: the export's goroutine goes on to the next value while
// up to Config.MaxAckPending publications await theirs, each counted as it
// comes (Sent, or PublishErrors and an Error). A failure comes after the
// handler has moved on, so it is not retried and the broker does not count
// it: an Async export is at most once. Only for ExportStream.
func Async[T any]() Option[T] {
	return Option[T]{apply: func(c *config[T]) {
		c.mark("Async")
		c.async = true
	}}
}
