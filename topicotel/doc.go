// Package topicotel reports a topic.Broker's counts as OpenTelemetry
// metrics: observable instruments read from the broker's snapshots, so that
// a broker costs nothing between collections and a publication never waits
// for one.
//
//	reg, err := topicotel.Register(&b, provider) // a metric.MeterProvider, nil for the global one
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer reg.Unregister()
//
// # Instruments
//
// Each collection calls Broker.Subscriptions, Broker.Topics and Broker.Logs
// once each, in one callback, and reports these instruments of the meter
// named ScopeName (kinds as in package go.opentelemetry.io/otel/metric,
// each an Int64 observable instrument, but for a Float64 histogram recorded
// as each call of a handler's function returns). What the OpenTelemetry semantic
// conventions for messaging name (version 1.43.0, the meter's schema URL)
// is reported under their names and attributes; the rest, losses by cause,
// queues, a handler's outcomes, a follower's and a log's offsets, under
// the package's:
//
//	instrument                           kind           unit            attributes               value
//	messaging.client.sent.messages       Counter        {message}       messaging.system, messaging.destination.name, messaging.operation.name, messaging.operation.type  TopicStats.Published: publications of the type that found a subscription
//	messaging.client.consumed.messages   Counter        {message}       messaging.system, messaging.destination.name, messaging.destination.subscription.name, messaging.operation.name, messaging.operation.type  Sent (a handler's: HandlerStats.Accepted): values delivered to the subscriber
//	messaging.process.duration           Histogram      s               messaging.system, messaging.destination.name, messaging.destination.subscription.name, messaging.operation.name, messaging.operation.type  Call.Duration: each call of a handler's function (see Broker.TimeCalls)
//	topic.subscription.count             UpDownCounter  {subscription}  type, name               the subscriptions of that type and name
//	topic.subscription.matched           Counter        {message}       type, name               Matched: values that reached them, of which lost counts a share
//	topic.subscription.lost              Counter        {message}       type, name, cause        Lost.Of(cause), for each cause that counted a value
//	topic.subscription.queued            UpDownCounter  {value}         type, name               Queued: values in the channel or queue, or a follower's lag
//	topic.subscription.capacity          UpDownCounter  {value}         type, name               Capacity of the channel or queue
//	topic.handler.handled                Counter        {value}         type, name               HandlerStats.Handled: calls that returned nil
//	topic.handler.retried                Counter        {retry}         type, name               HandlerStats.Retried: retries made
//	topic.handler.dead_lettered          Counter        {value}         type, name               HandlerStats.DeadLettered: values published as dead letters
//	topic.follower.offset                Gauge          {offset}        type, name               FollowerStats.Offset: the offset it reads next
//	topic.follower.committed             Gauge          {offset}        type, name               FollowerStats.Committed: the offsets below it are committed
//	topic.follower.lag                   UpDownCounter  {value}         type, name               FollowerStats.Lag: values kept that it has not read
//	topic.log.appended                   Counter        {value}         type, keyed              LogStats.Next: values appended, the offset the next one gets
//	topic.log.oldest                     Gauge          {offset}        type, keyed              LogStats.Oldest: the offset of the oldest value kept
//	topic.log.kept                       UpDownCounter  {value}         type, keyed              LogStats.Kept: values (or, keyed, keys) kept
//
// The handler instruments have points for handler subscriptions only
// (Broker.Handle), the follower instruments for followers only (Broker.Follow,
// and the Follow option); the log instruments, one point per retained type.
// A cause has a topic.subscription.lost point once it has counted a value:
// a subscription that lost nothing has none.
//
// # Attributes
//
// The messaging instruments have the conventions' attributes, and a call
// that failed has error.type too: the type of the error its function
// returned, as fmt's %T prints it, or "panic". The others have attributes
// named in the topic namespace:
//
//	attribute                                 type    value
//	messaging.system                          string  "topic"
//	messaging.destination.name                string  the type, as topic.type
//	messaging.destination.subscription.name   string  the subscription's Name, as topic.subscription.name
//	messaging.operation.name                  string  "publish" for sent, "receive" for consumed, "process" for the duration
//	messaging.operation.type                  string  "send" for sent, "receive" for consumed, "process" for the duration
//	topic.type                                string  the type, as reflect.Type.String prints it: "main.Order", "[]uint8"
//	topic.subscription.name                   string  the subscription's Name option, empty without one
//	topic.cause              string  the cause, as topic.Cause.String prints it: "full", "evicted", ...
//	topic.log.keyed          bool    whether the log was declared by RetainLatest
//
// and the Attributes option adds its own to every point. Subscriptions of
// the same type and name (unnamed subscriptions of one type, say) make one
// point: their counts are added, but for the follower offsets, which are
// those of the follower furthest behind (the least). A counter of such a
// point falls when one of them ends, which a backend reads as a reset; name
// subscriptions to see each on its own. So does a subscription's counter
// when it ends and another of the same type and name begins.
//
// # Collection
//
// The counts are those of Broker.Subscriptions and Broker.Logs, with their
// costs and promises: a collection takes the broker's lock for as long as
// they list the subscriptions and logs, never delays a publication, and
// reads each count atomically, one by one. A handler publishes its counts
// at least every 64 values and whenever its queue is empty. Points of a
// subscription that ended, or a type no longer retained, are not reported
// again. After Broker.Shutdown the points are the final counts, which
// Subscriptions keeps, and there are no log points: Logs returns none.
// Collections may run concurrently (two readers of one provider); each
// takes its own snapshots.
//
// # Registration
//
// Register may be called at any time; the instruments it creates are those
// of the meter of ScopeName, shared by every registration on the
// MeterProvider. A MeterProvider takes one registration per set of
// attributes given with Attributes: a second, of the same broker or
// another, would report points with the same attributes, which the
// provider would add up, so Register refuses it with ErrRegistered until the
// first is unregistered. Give each broker registered on one provider its own
// attribute (attribute.String("broker", "orders")) to register them all.
// A nil MeterProvider means the global one, otel.GetMeterProvider() when
// Register is called.
package topicotel
