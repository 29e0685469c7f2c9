// Package natsbridge carries a topic.Broker's values across processes
// through NATS: core NATS for live fan-out, JetStream for durable streams
// with offsets, replay and retention.
//
// A process publishes and subscribes on its broker as before. An export
// sends every value of a chosen type to a NATS subject; an import publishes
// every message of a subject on the broker, decoded.
//
//	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
//	br := natsbridge.New(&b, nc, natsbridge.Config{OnError: logError})
//	defer br.Close()
//
//	br.Export[Order]("shop.orders")       // every Order published on b goes out
//	br.Import[Order]("shop.orders")       // every Order from elsewhere comes in, as an Imported[Order]
//
// # Subjects and codecs
//
// Go type identity does not cross processes, so the application names each
// type's subject; DefaultSubject derives one from the type's package path
// and name for programs that share the type. A subject NATS would drop or
// treat as a wildcard (a..b, .a, w.* for an export) is refused with an error.
// Values are encoded by a Codec, JSON by default; a type that is or holds an
// interface needs a codec that names its variants.
//
// # Loop prevention
//
// An import publishes an Imported[T], never a T, so an export of T never sees
// an imported value (an export of an interface type, any included, skips
// Imported values): no bridge, in this process or another, sends again what it
// received. Subscribers that want plain values add topic.From(Unwrap[T]).
// A process that exports and imports the same subject does not receive its
// own values back: on core NATS through the connection's NoEcho option (see
// ConnectOptions), or, without it, through the OriginHeader its exports then
// carry; from JetStream, whose consumers deliver a connection's own messages
// despite NoEcho, through the OriginHeader every stream export carries. Loop
// prevention is per Bridge: bridge a broker through one.
//
// # Delivery and loss
//
// Core NATS is at most once. A value is lost, with no error from nats.go,
// if it is published while the server is unreachable and nats.go's
// reconnect buffer is then discarded (the reconnect fails or the buffer
// overflows), if it is published just as the server dies, or if no import
// is subscribed at that moment; an import that falls behind loses messages
// to nats.go's slow-consumer policy. Use it for live state and
// notifications.
//
// JetStream is at least once. A stream export waits for the stream's
// acknowledgement of each value and publishes it again until it comes
// (DefaultRetry), each attempt under the same message ID, so that the
// stream stores it once within its duplicate window. A durable stream
// import acknowledges a message only after publishing it on the broker, and
// the stream delivers again what was not acknowledged. HandleStream carries
// the guarantee to the end: it acknowledges a message only once a handler's
// function returned nil for it, has it redelivered with back-off after an
// error, and makes it a dead letter, on the broker and on NATS, after a
// permanent error or the last attempt. A consumer may therefore get a value
// twice after a failure: consumers must tolerate duplicates.
// Imported.Offset, the stream sequence, identifies a stored message, and
// Imported.Delivered above one marks a redelivery. An Async stream export
// trades the export's half of this for speed: a publication that fails
// after the export moved on is counted and reported, not retried.
//
// Nothing is lost silently: every encode, decode, publish and acknowledgement
// failure, every slow-consumer report and every disconnect is counted (Stats)
// and reported (Config.OnError). An export is a handler subscription of the
// broker, so its losses are also the broker's lost-value counts
// (topic.Broker.Subscriptions), with the *Error in topic.Loss.Err. A malformed
// message is counted and skipped; the import goes on. What the broker then
// does with an Imported value is the broker's contract: a subscription whose
// buffer is full loses it, counted there.
//
// # Reconnects
//
// Reconnecting is nats.go's work, and the links survive it: imports are
// subscribed again, durable consumers resume. nats.go's default gives up
// after 60 attempts, about two minutes, and then closes the connection,
// which ends every link; ConnectOptions asks for unlimited attempts.
//
// # Lifecycle
//
// Link.Stop stops one export or import, Bridge.Close all of them; both are
// idempotent and wait for the goroutines they stop. Shutting the broker down
// (topic.Broker.Shutdown) stops the imports as it begins (topic.Broker.Done),
// so that nothing new comes in, and drains the exports as it drains any
// handler: what they hold, and what the broker's handlers publish during the
// drain, goes out to NATS before they end. Export and Import then return
// ErrClosed. The connection is the application's: drain or close it after
// the bridge.
//
// # Concurrency
//
// A Bridge is safe for concurrent use. Each link runs one goroutine, which
// publishes or sends its values in order.
package natsbridge

import (
	"time"

	"github.com/nats-io/nats.go"
)

// ConnectOptions returns the nats.go options recommended for a bridge's
// connection, to pass to nats.Connect before any of the application's own:
// NoEcho, so that a process does not receive its own core NATS exports;
// unlimited reconnect attempts, half a second apart (nats.go's default gives
// up after two minutes and closes the connection, ending every link).
//
// Until it reconnects, nats.go buffers core NATS publications (8 MiB by
// default, nats.ReconnectBufSize) and sends them once reconnected; beyond
// that, publishing fails, counted as PublishErrors.
func ConnectOptions() []nats.Option {
	return []nats.Option{
		nats.NoEcho(),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
	}
}
