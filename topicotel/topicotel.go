package topicotel

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"sync"

	"github.com/seedaa7df82c/topic"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/messagingconv"
)

// ScopeName is the name of the meter Register takes from a MeterProvider:
// the instrumentation scope of every instrument of the package, for views
// and filters.
const ScopeName = "github.com/seedaa7df82c/topic/topicotel"

// ErrRegistered is the error of Register when the MeterProvider already
// holds a registration with the same attributes, not unregistered since.
var ErrRegistered = errors.New("topicotel: a registration with these attributes is already on this MeterProvider")

// The keys of the package's attributes.
const (
	keyType   = attribute.Key("topic.type")
	keyName   = attribute.Key("topic.subscription.name")
	keyCause  = attribute.Key("topic.cause")
	keyKeyed  = attribute.Key("topic.log.keyed")
	numCauses = len(causes)
)

// The messaging semantic conventions' attributes: the system is "topic",
// the destination a type, a subscription its Name.
var (
	system    = semconv.MessagingSystemKey.String("topic")
	publish   = []attribute.KeyValue{semconv.MessagingOperationNameKey.String("publish"), semconv.MessagingOperationTypeKey.String("send")}
	receive   = []attribute.KeyValue{semconv.MessagingOperationNameKey.String("receive"), semconv.MessagingOperationTypeKey.String("receive")}
	keyDest   = semconv.MessagingDestinationNameKey
	keySubDst = semconv.MessagingDestinationSubscriptionNameKey
)

// causes are the causes of loss reported, in the order of topic.Lost.
var causes = [...]topic.Cause{topic.Full, topic.Evicted, topic.Failed, topic.Errored, topic.Discarded, topic.Closed, topic.Skipped}

// Register creates the package's instruments on mp's meter of ScopeName
// (see the package documentation) and registers a callback that reports
// b's counts at every collection, from one Broker.Subscriptions, one Broker.Topics and one
// Broker.Logs; and it times every call of a handler's function
// (Broker.TimeCalls) for the histogram messaging.process.duration, until
// Unregister. Register itself takes no snapshot and does not wait for a
// collection.
//
// Unregister, on the Registration returned, removes the callback: the
// broker is not reported again and the instruments have no more points.
// It is idempotent, and once it has returned nil the same attributes may
// be registered on mp again.
//
// Register panics if b is nil. A nil mp means the global MeterProvider,
// otel.GetMeterProvider() at the time of the call. Register returns
// ErrRegistered if mp already holds a registration with the attributes of
// opts (none, without Attributes), of b or another broker; and an error of
// mp's meter if it fails to create an instrument or to register the
// callback, with no registration made. A MeterProvider whose dynamic type
// is not comparable cannot be told from another: Register then does not
// check for a second registration.
func Register(b *topic.Broker, mp metric.MeterProvider, opts ...Option) (metric.Registration, error) {
	if b == nil {
		panic("topicotel: Register of a nil broker")
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	c := configure(opts)
	key := &regKey{mp, c.attrs.Equivalent()}
	if !reflect.ValueOf(mp).Comparable() {
		key = nil
	}
	if !key.claim() {
		return nil, ErrRegistered
	}
	m := mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	ins, all, err := newInstruments(m)
	if err != nil {
		key.release()
		return nil, err
	}
	r := &reporter{b: b, ins: ins, attrs: c.attrs.ToSlice(), subs: make(map[subKey]*subPoint),
		logs: make(map[logKey]*logPoint), topics: make(map[string]*topicPoint)}
	process, err := messagingconv.NewProcessDuration(m)
	if err != nil {
		key.release()
		return nil, err
	}
	reg, err := m.RegisterCallback(r.observe, all...)
	if err != nil {
		key.release()
		return nil, err
	}
	t := &timer{process: process, attrs: r.attrs}
	return &registration{reg: reg, key: key, stopTimer: b.TimeCalls(t.record)}, nil
}

// A timer records the calls of a broker's handlers' functions in the
// histogram messaging.process.duration.
type timer struct {
	process messagingconv.ProcessDuration // never changes
	attrs   []attribute.KeyValue          // the Attributes option's; never changes
	sets    sync.Map                      // callKey -> attribute.Set, made once each
}

// A callKey names the attributes of a call.
type callKey struct {
	typ     reflect.Type
	name    string
	errType string // "" for a success
}

// record records c: on the handler's goroutine, between two calls.
func (t *timer) record(c topic.Call) {
	k := callKey{c.Type, c.Name, ""}
	var pe *topic.PanicError
	switch {
	case errors.As(c.Err, &pe):
		k.errType = "panic"
	case c.Err != nil:
		k.errType = reflect.TypeOf(c.Err).String()
	}
	set, ok := t.sets.Load(k)
	if !ok {
		kvs := append(slices.Clone(t.attrs), system, keyDest.String(k.typ.String()), keySubDst.String(k.name),
			semconv.MessagingOperationNameKey.String("process"), semconv.MessagingOperationTypeKey.String("process"))
		if k.errType != "" {
			kvs = append(kvs, semconv.ErrorTypeKey.String(k.errType))
		}
		set, _ = t.sets.LoadOrStore(k, attribute.NewSet(kvs...))
	}
	t.process.RecordSet(context.Background(), c.Duration.Seconds(), set.(attribute.Set))
}

// A regKey names a registration: its provider and attributes.
type regKey struct {
	mp    metric.MeterProvider // comparable
	attrs attribute.Distinct
}

// registered holds the registrations not unregistered, of every provider.
var registered struct {
	mu   sync.Mutex
	keys map[regKey]bool // mu
}

// claim records k and reports true, or reports false if it is recorded
// already. A nil k is not recorded: it claims nothing.
func (k *regKey) claim() bool {
	if k == nil {
		return true
	}
	registered.mu.Lock()
	defer registered.mu.Unlock()
	if registered.keys[*k] {
		return false
	}
	if registered.keys == nil {
		registered.keys = make(map[regKey]bool)
	}
	registered.keys[*k] = true
	return true
}

// release forgets k, claimed before. A nil k does nothing.
func (k *regKey) release() {
	if k == nil {
		return
	}
	registered.mu.Lock()
	defer registered.mu.Unlock()
	delete(registered.keys, *k)
}

// A registration is what Register returns: the meter's, and the claim of
// its key, released once the meter's is unregistered.
type registration struct {
	embedded.Registration
	reg       metric.Registration // never changes
	key       *regKey             // never changes; nil if not claimed
	stopTimer func()              // ends the broker's TimeCalls; never changes
	once      sync.Once
}

func (g *registration) Unregister() error {
	if err := g.reg.Unregister(); err != nil {
		return err
	}
	g.once.Do(func() {
		g.stopTimer()
		g.key.release()
	})
	return nil
}

// instruments are the instruments of one registration. None changes.
type instruments struct {
	sent, consumed                 metric.Int64ObservableCounter // the messaging conventions'
	count, queued, capacity        metric.Int64ObservableUpDownCounter
	lost, matched                  metric.Int64ObservableCounter
	handled, retried, deadLettered metric.Int64ObservableCounter
	offset, committed              metric.Int64ObservableGauge
	lag                            metric.Int64ObservableUpDownCounter
	appended                       metric.Int64ObservableCounter
	oldest                         metric.Int64ObservableGauge
	kept                           metric.Int64ObservableUpDownCounter
}

// newInstruments creates the instruments on m, and returns them also as a
// list for RegisterCallback. The names, units and descriptions are those
// of the table in the package documentation.
func newInstruments(m metric.Meter) (*instruments, []metric.Observable, error) {
	var (
		errs []error
		all  []metric.Observable
	)
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs, all = append(errs, err), append(all, c)
		return c
	}
	upDown := func(name, unit, desc string) metric.Int64ObservableUpDownCounter {
		c, err := m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs, all = append(errs, err), append(all, c)
		return c
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs, all = append(errs, err), append(all, g)
		return g
	}
	sent, err := messagingconv.NewClientSentMessagesObservable(m)
	errs, all = append(errs, err), append(all, sent.Inst())
	consumed, err := messagingconv.NewClientConsumedMessagesObservable(m)
	errs, all = append(errs, err), append(all, consumed.Inst())
	ins := &instruments{
		sent:         sent.Inst(),
		consumed:     consumed.Inst(),
		count:        upDown("topic.subscription.count", "{subscription}", "The subscriptions of the type and name."),
		lost:         counter("topic.subscription.lost", "{message}", "The values the subscriptions lost, by cause."),
		matched:      counter("topic.subscription.matched", "{message}", "The values that reached the subscriptions: sent, rejected by a From function, or lost before a send."),
		queued:       upDown("topic.subscription.queued", "{value}", "The values in the subscriptions' channels or queues, not yet received (a follower's: its lag)."),
		capacity:     upDown("topic.subscription.capacity", "{value}", "The capacity of the subscriptions' channels or queues."),
		handled:      counter("topic.handler.handled", "{value}", "The values for which the handlers' functions returned nil."),
		retried:      counter("topic.handler.retried", "{retry}", "The retries the handlers made."),
		deadLettered: counter("topic.handler.dead_lettered", "{value}", "The values the handlers published as dead letters."),
		offset:       gauge("topic.follower.offset", "{offset}", "The offset the follower reads next (of several: the least)."),
		committed:    gauge("topic.follower.committed", "{offset}", "The offset below which the follower committed every value (of several: the least)."),
		lag:          upDown("topic.follower.lag", "{value}", "The values kept that the followers have not read."),
		appended:     counter("topic.log.appended", "{value}", "The values appended to the retained type's log: the offset the next one gets."),
		oldest:       gauge("topic.log.oldest", "{offset}", "The offset of the oldest value the log keeps."),
		kept:         upDown("topic.log.kept", "{value}", "The values the log keeps (a keyed log: the keys)."),
	}
	return ins, all, errors.Join(errs...)
}

// A reporter reports one broker for one registration. Its callback runs
// for each collection, concurrently for two readers: mu guards its cache.
type reporter struct {
	b     *topic.Broker        // never changes
	ins   *instruments         // never changes
	attrs []attribute.KeyValue // the Attributes option's; never changes

	mu      sync.Mutex
	gen     uint64                 // mu: the collections made
	subs    map[subKey]*subPoint   // mu: the points of the last collection
	logs    map[logKey]*logPoint   // mu
	topics  map[string]*topicPoint // mu: by type
	touched []*subPoint            // mu: the points of this collection, in order; reused
}

// A subKey names the point of the subscriptions of one type and name.
type subKey struct{ typ, name string }

// A subPoint is the attributes of the point of the subscriptions of one
// type and name, made once and kept while the subscriptions live, and the
// counts of one collection, added up.
type subPoint struct {
	gen    uint64                          // the last collection that saw it
	base   [1]metric.ObserveOption         // the type and the name (a slice of it is passed, without allocating)
	sem    [1]metric.ObserveOption         // the same in the messaging conventions' attributes
	causes [numCauses]metric.ObserveOption // the same with each cause; made when first needed
	kvs    []attribute.KeyValue            // the attributes of base, for causes
	counts subCounts                       // of the collection gen
}

// subCounts are the counts of the subscriptions of one point, added up.
type subCounts struct {
	n, queued, capacity int64
	matched, consumed   uint64
	lost                [numCauses]uint64
	handlers, followers int
	handler             topic.HandlerStats
	offset, committed   uint64 // the least
	lag                 uint64
}

// A topicPoint is the attributes of a published type's point, made once and
// kept while the type is routed.
type topicPoint struct {
	gen  uint64
	base [1]metric.ObserveOption
}

// A logKey names the point of a retained type.
type logKey struct {
	typ   string
	keyed bool
}

// A logPoint is the attributes of a retained type's point and the counts of
// one collection.
type logPoint struct {
	gen    uint64
	base   [1]metric.ObserveOption
	counts logCounts // of the collection gen
}

// logCounts are the counts of the logs of one point, added up: one log,
// unless two retained types print alike.
type logCounts struct {
	n              int
	appended, kept uint64
	oldest         uint64 // the least
}

// observe is the callback: it takes the broker's snapshots, adds up the
// counts of each point, observes them, and forgets the points it did not
// see.
func (r *reporter) observe(_ context.Context, o metric.Observer) error {
	subs := r.b.Subscriptions()
	topics := r.b.Topics()
	logs := r.b.Logs()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	r.touched = r.touched[:0]
	for i := range subs {
		r.add(&subs[i])
	}
	for _, p := range r.touched {
		r.observeSub(o, p)
	}
	clear(r.touched) // keep no point alive past its subscriptions
	for _, t := range topics {
		typ := t.Type.String()
		p := r.topics[typ]
		if p == nil {
			p = &topicPoint{}
			p.base[0] = r.withAttrs(append([]attribute.KeyValue{system, keyDest.String(typ)}, publish...))
			r.topics[typ] = p
		}
		p.gen = r.gen
		o.ObserveInt64(r.ins.sent, i64(t.Published), p.base[:]...)
	}
	for k, p := range r.topics {
		if p.gen != r.gen {
			delete(r.topics, k)
		}
	}
	for _, st := range logs {
		p := r.logPoint(logKey{st.Type.String(), st.Keyed})
		c := &p.counts
		if p.gen != r.gen {
			p.gen = r.gen
			*c = logCounts{oldest: math.MaxUint64}
		}
		c.n++
		c.appended += st.Next
		c.kept += uint64(st.Kept)
		c.oldest = min(c.oldest, st.Oldest)
	}
	for _, p := range r.logs {
		if p.gen == r.gen {
			o.ObserveInt64(r.ins.appended, i64(p.counts.appended), p.base[:]...)
			o.ObserveInt64(r.ins.oldest, i64(p.counts.oldest), p.base[:]...)
			o.ObserveInt64(r.ins.kept, i64(p.counts.kept), p.base[:]...)
		}
	}
	for k, p := range r.subs {
		if p.gen != r.gen {
			delete(r.subs, k)
		}
	}
	for k, p := range r.logs {
		if p.gen != r.gen {
			delete(r.logs, k)
		}
	}
	return nil
}

// add adds the counts of st to its point's, resetting them first if it is
// the first of this collection. Locked: r.mu is held.
func (r *reporter) add(st *topic.SubscriptionStats) {
	k := subKey{st.Type.String(), st.Name}
	p := r.subs[k]
	if p == nil {
		p = r.newSubPoint(k)
		r.subs[k] = p
	}
	c := &p.counts
	if p.gen != r.gen {
		p.gen = r.gen
		r.touched = append(r.touched, p)
		*c = subCounts{offset: math.MaxUint64, committed: math.MaxUint64}
	}
	c.n++
	c.matched += st.Matched
	if h := st.Handler; h != nil {
		c.consumed += h.Accepted // handed to the function
	} else {
		c.consumed += st.Sent // put in the channel, or read by a follower
	}
	c.queued += int64(st.Queued)
	c.capacity += int64(st.Capacity)
	for i, cause := range causes {
		c.lost[i] += st.Lost.Of(cause)
	}
	if h := st.Handler; h != nil {
		c.handlers++
		c.handler.Handled += h.Handled
		c.handler.Retried += h.Retried
		c.handler.DeadLettered += h.DeadLettered
	}
	if f := st.Follower; f != nil {
		c.followers++
		c.offset = min(c.offset, f.Offset)
		c.committed = min(c.committed, f.Committed)
		c.lag += f.Lag
	}
}

// observeSub observes the counts of p. Locked: r.mu is held.
func (r *reporter) observeSub(o metric.Observer, p *subPoint) {
	c := &p.counts
	at := p.base[:]
	o.ObserveInt64(r.ins.count, c.n, at...)
	o.ObserveInt64(r.ins.matched, i64(c.matched), at...)
	o.ObserveInt64(r.ins.consumed, i64(c.consumed), p.sem[:]...)
	o.ObserveInt64(r.ins.queued, c.queued, at...)
	o.ObserveInt64(r.ins.capacity, c.capacity, at...)
	for i, n := range c.lost {
		if n > 0 {
			if p.causes[i] == nil {
				p.causes[i] = r.withAttrs(append(p.kvs, keyCause.String(causes[i].String())))
			}
			o.ObserveInt64(r.ins.lost, i64(n), p.causes[i:i+1]...)
		}
	}
	if c.handlers > 0 {
		o.ObserveInt64(r.ins.handled, i64(c.handler.Handled), at...)
		o.ObserveInt64(r.ins.retried, i64(c.handler.Retried), at...)
		o.ObserveInt64(r.ins.deadLettered, i64(c.handler.DeadLettered), at...)
	}
	if c.followers > 0 {
		o.ObserveInt64(r.ins.offset, i64(c.offset), at...)
		o.ObserveInt64(r.ins.committed, i64(c.committed), at...)
		o.ObserveInt64(r.ins.lag, i64(c.lag), at...)
	}
}

// newSubPoint makes the point of k, without counts.
func (r *reporter) newSubPoint(k subKey) *subPoint {
	p := &subPoint{kvs: []attribute.KeyValue{keyType.String(k.typ), keyName.String(k.name)}}
	p.kvs = p.kvs[:len(p.kvs):len(p.kvs)] // so that an append for a cause copies
	p.base[0] = r.withAttrs(p.kvs)
	p.sem[0] = r.withAttrs(append([]attribute.KeyValue{system, keyDest.String(k.typ), keySubDst.String(k.name)}, receive...))
	return p
}

// logPoint returns the point of k, made if new. Locked: r.mu is held.
func (r *reporter) logPoint(k logKey) *logPoint {
	p := r.logs[k]
	if p == nil {
		p = &logPoint{}
		p.base[0] = r.withAttrs([]attribute.KeyValue{keyType.String(k.typ), keyKeyed.Bool(k.keyed)})
		r.logs[k] = p
	}
	return p
}

// withAttrs returns the option of the attributes of the Attributes option
// and kvs, kvs replacing those of the same key.
func (r *reporter) withAttrs(kvs []attribute.KeyValue) metric.ObserveOption {
	all := make([]attribute.KeyValue, 0, len(r.attrs)+len(kvs))
	all = append(append(all, r.attrs...), kvs...)
	return metric.WithAttributeSet(attribute.NewSet(all...))
}

// i64 converts a count to an int64, at most math.MaxInt64.
func i64(n uint64) int64 { return int64(min(n, math.MaxInt64)) }
