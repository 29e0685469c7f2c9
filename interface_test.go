package topic_test

// Tests of interface subscriptions: each receives the dynamic value of
// every publication it matches, with the method table of its own type, on
// the route of every dynamic type published through an interface (the
// method table of an interface source is computed once per route entry),
// and cancelling some leaves the others routed. None of them depends on
// timing.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// The types of the interface tests (interface_test.go), published by them
// and by the tests of churn_test.go alone: values with value and pointer
// receivers, not pointer-shaped and zero-sized, and the interfaces they
// implement.
type (
	ifaceVal   struct{ s string } // value receivers: fmt.Stringer, ifaceKinder
	ifacePtr   struct{ s string } // pointer receivers: fmt.Stringer, ifaceKinder, error; nil-safe
	ifaceCode  int                // value receivers: error, fmt.Stringer (so ifaceBoth)
	ifaceZero  struct{}           // value receiver: ifaceKinder
	ifaceBig   [6]int64           // value receiver: fmt.Stringer; not pointer-shaped
	ifaceLabel string             // value receiver: fmt.Stringer; never published
	ifaceStr   string             // value receiver: fmt.Stringer

	ifaceRec struct{ N int } // retained; implements fmt.Stringer

	ifaceKinder interface{ Kind() int }
	ifaceBoth   interface {
		error
		fmt.Stringer
	}
	ifaceEmpty interface{}
)

func (v ifaceVal) String() string { return "val " + v.s }
func (v ifaceVal) Kind() int      { return 100 + len(v.s) }
func (p *ifacePtr) String() string {
	if p == nil {
		return "ptr <nil>"
	}
	return "ptr " + p.s
}
func (p *ifacePtr) Kind() int {
	if p == nil {
		return -1
	}
	return 200 + len(p.s)
}
func (p *ifacePtr) Error() string {
	if p == nil {
		return "ptr error <nil>"
	}
	return "ptr error " + p.s
}
func (c ifaceCode) Error() string   { return "code error " + strconv.Itoa(int(c)) }
func (c ifaceCode) String() string  { return "code " + strconv.Itoa(int(c)) }
func (ifaceZero) Kind() int         { return 0 }
func (b ifaceBig) String() string   { return fmt.Sprint("big ", [6]int64(b)) }
func (l ifaceLabel) String() string { return "label " + string(l) }
func (r ifaceRec) String() string   { return "rec " + strconv.Itoa(r.N) }
func (s ifaceStr) String() string   { return "str " + string(s) }

// publishStringers publishes one value of each of several dynamic types through
// fmt.Stringer (each its own route entry of the static type fmt.Stringer)
// and the same values concretely, tagged with k; it returns what a
// subscription to fmt.Stringer should receive, as strings.
func publishStringers(b *topic.Broker, k int) []string {
	ks := strconv.Itoa(k)
	vals := []fmt.Stringer{
		ifaceVal{ks}, &ifacePtr{ks}, ifaceCode(k), ifaceBig{int64(k), 1, 2, 3, 4, 5}, churnTick{k}, ifaceStr(ks), (*ifacePtr)(nil),
	}
	var want []string
	for _, v := range vals {
		b.Publish(v)
		want = append(want, fmt.Sprintf("%T %s", v, v.String()))
	}
	b.Publish(ifaceVal{ks})
	b.Publish(&ifacePtr{ks})
	b.Publish(ifaceCode(k))
	b.Publish(churnTick{k})
	want = append(want, "topic_test.ifaceVal val "+ks, "*topic_test.ifacePtr ptr "+ks, "topic_test.ifaceCode code "+ks, "topic_test.churnTick tick "+ks)
	return want
}

func describeAll(xs []fmt.Stringer) []string {
	var out []string
	for _, x := range xs {
		if x == nil {
			out = append(out, "<nil interface>")
			continue
		}
		out = append(out, fmt.Sprintf("%T %s", x, x.String()))
	}
	return out
}

// A plain subscription of an interface type is listed on the
// route of every dynamic type published through that interface (its `at`
// hint is then right for one of them at most), and on the routes of the
// concrete types as a boxed source. Cancelling such subscriptions one by
// one, in several orders, so that each of those routes buries and compacts
// on its own, leaves each of the others receiving every later publication,
// with its dynamic value, once, and closes the cancelled ones.
func TestCancellingInterfaceSubscriptionsRoutedOnManyDynamicTypesLeavesTheOthersRouted(t *testing.T) {
	orders := map[string]func(n int) []int{
		"last first": func(n int) []int {
			o := make([]int, n)
			for i := range o {
				o[i] = n - 1 - i
			}
			return o
		},
		"first first": func(n int) []int {
			o := make([]int, n)
			for i := range o {
				o[i] = i
			}
			return o
		},
		"middle out": func(n int) []int {
			var o []int
			for d := 0; len(o) < n; d++ {
				if i := n/2 + d; i < n {
					o = append(o, i)
				}
				if i := n/2 - d - 1; d >= 0 && i >= 0 && len(o) < n {
					o = append(o, i)
				}
			}
			return o
		},
		"shuffled": func(n int) []int { return rand.New(rand.NewPCG(13, 13)).Perm(n) },
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			var b topic.Broker
			const n = 24
			chs := make([]<-chan fmt.Stringer, n)
			cancels := make([]func(), n)
			for i := range chs {
				if i%3 == 0 {
					// Each dynamic type's route gets its entry before some
					// subscriptions and after others: the routes list them
					// in different orders, at different indices.
					publishStringers(&b, -1)
					for _, ch := range chs[:i] {
						takeAll(ch)
					}
				}
				chs[i], cancels[i] = b.Subscribe(topic.Buffer[fmt.Stringer](32))
			}
			// A subscription to any on the routes of values published
			// through any: another static type, another set of entries.
			anys, cancelAnys := b.Subscribe(topic.Buffer[any](64))
			defer cancelAnys()
			for _, ch := range chs {
				takeAll(ch)
			}
			takeAll(anys)
			gone := make([]bool, n)
			for k, i := range order(n) {
				cancels[i]()
				gone[i] = true
				if k%4 == 0 {
					cancels[i]()
				}
				want := publishStringers(&b, k)
				b.Publish(any(ifaceZero{})) // not a fmt.Stringer
				b.Publish(any(nil))
				for j, ch := range chs {
					if gone[j] {
						if got := takeAll(ch); len(got) != 0 || !isClosed(ch) {
							t.Fatalf("after cancel %d, cancelled subscription %d received %v (closed: %t)", k, j, describeAll(got), isClosed(ch))
						}
						continue
					}
					if got := describeAll(takeAll(ch)); !slices.Equal(got, want) {
						t.Fatalf("after cancel %d, subscription %d received\n%q\nwant\n%q", k, j, got, want)
					}
				}
				gotAny := takeAll(anys)
				if len(gotAny) != len(want)+2 || gotAny[len(gotAny)-2] != any(ifaceZero{}) || gotAny[len(gotAny)-1] != nil {
					t.Fatalf("after cancel %d, the any subscription received %v", k, gotAny)
				}
			}
			if got := len(b.Subscriptions()); got != 1 {
				t.Errorf("%d subscriptions listed after cancelling all but one", got)
			}
		})
	}
}

// ifacePub is one publication of the model of
// TestInterfaceSourcesReceiveTheDynamicValue: its static type and the value
// (nil for a nil interface value).
type ifacePub struct {
	static reflect.Type
	v      any
	do     func(b *topic.Broker)
}

func pubOf[S any](v S) ifacePub {
	return ifacePub{reflect.TypeFor[S](), any(v), func(b *topic.Broker) { b.Publish(v) }}
}

// matches reports whether a source of type I matches p (see doc.go,
// Matching).
func (p ifacePub) matches(i reflect.Type) bool {
	return p.static == i || i == reflect.TypeFor[any]() || p.v != nil && reflect.TypeOf(p.v).Implements(i)
}

// ifaceProbe subscribes to the interface type I in every way a value reaches
// an interface source: plain, DropOldest, OnLoss with no buffer (every value
// lost, reported with its value), a From source of type I, and a From
// source of type I on a subscription of another interface type. desc
// describes a value by calling I's methods on it, so that a wrong method
// table shows.
type ifaceProbe struct {
	name    string
	collect func() map[string][]string
	want    func(pubs []ifacePub) []string
}

func newIfaceProbe[I any](b *topic.Broker, name string, desc func(I) string) (*ifaceProbe, func()) {
	plain, c1 := b.Subscribe(topic.Buffer[I](256))
	oldest, c2 := b.Subscribe(topic.Buffer[I](256), topic.Overflow[I](topic.DropOldest))
	var mu sync.Mutex
	var lost []string
	_, c3 := b.Subscribe(topic.Buffer[I](0), topic.OnLoss(func(l topic.Loss[I]) {
		mu.Lock()
		defer mu.Unlock()
		if l.Cause != topic.Full {
			lost = append(lost, "cause "+l.Cause.String())
			return
		}
		lost = append(lost, desc(l.Value))
	}))
	from, c4 := b.Subscribe(topic.Buffer[string](256), topic.From(func(x I) (string, bool) { return desc(x), true }))
	// A subscription of type ifaceLabel (no publication has that type) whose
	// only matching source is its From source of type I.
	lbl, c5 := b.Subscribe(topic.Buffer[ifaceLabel](256), topic.From(func(x I) (ifaceLabel, bool) { return ifaceLabel(desc(x)), true }))
	descAll := func(xs []I) []string {
		var out []string
		for _, x := range xs {
			out = append(out, desc(x))
		}
		return out
	}
	p := &ifaceProbe{name: name}
	p.collect = func() map[string][]string {
		mu.Lock()
		defer mu.Unlock()
		var lbls []string
		for _, l := range takeAll(lbl) {
			lbls = append(lbls, string(l))
		}
		return map[string][]string{
			"plain":                descAll(takeAll(plain)),
			"DropOldest":           descAll(takeAll(oldest)),
			"OnLoss":               slices.Clone(lost),
			"From":                 takeAll(from),
			"From on another type": lbls,
		}
	}
	p.want = func(pubs []ifacePub) []string {
		var out []string
		for _, pub := range pubs {
			if !pub.matches(reflect.TypeFor[I]()) {
				continue
			}
			var x I
			if pub.v != nil {
				x = pub.v.(I)
			}
			out = append(out, desc(x))
		}
		return out
	}
	return p, func() { c1(); c2(); c3(); c4(); c5() }
}

// Interface subscriptions receive the dynamic value of every
// publication they match, with the method table of their own type:
// values with value and pointer receivers, non-pointer-shaped and
// zero-sized values, nil pointers, nil interface values, values published
// concretely and through several interfaces, many dynamic types on one
// static type. Each value is published twice: once as its route is made,
// once through the route made.
func TestInterfaceSourcesReceiveTheDynamicValue(t *testing.T) {
	var b topic.Broker
	var probes []*ifaceProbe
	add := func(p *ifaceProbe, cancel func()) {
		probes = append(probes, p)
		t.Cleanup(cancel)
	}
	add(newIfaceProbe(&b, "fmt.Stringer", func(x fmt.Stringer) string {
		if x == nil {
			return "nil"
		}
		return fmt.Sprintf("%T %s", x, x.String())
	}))
	add(newIfaceProbe(&b, "error", func(x error) string {
		if x == nil {
			return "nil"
		}
		return fmt.Sprintf("%T %s", x, x.Error())
	}))
	add(newIfaceProbe(&b, "ifaceKinder", func(x ifaceKinder) string {
		if x == nil {
			return "nil"
		}
		return fmt.Sprintf("%T %d", x, x.Kind())
	}))
	add(newIfaceProbe(&b, "ifaceBoth", func(x ifaceBoth) string {
		if x == nil {
			return "nil"
		}
		return fmt.Sprintf("%T %s / %s", x, x.Error(), x.String())
	}))
	anyDesc := func(x any) string {
		if x == nil {
			return "nil"
		}
		return fmt.Sprintf("%T %#v", x, x)
	}
	add(newIfaceProbe(&b, "any", anyDesc))
	add(newIfaceProbe(&b, "ifaceEmpty", func(x ifaceEmpty) string { return anyDesc(x) }))

	p1, p2 := &ifacePtr{"p1"}, &ifacePtr{"p2"}
	pubs := []ifacePub{
		pubOf(ifaceVal{"a"}), pubOf(p1), pubOf(ifaceCode(3)), pubOf(ifaceZero{}), pubOf(ifaceBig{1, 2, 3, 4, 5, 6}),
		pubOf((*ifacePtr)(nil)), pubOf(churnTick{7}), pubOf(ifaceStr("s")),
		pubOf[fmt.Stringer](ifaceVal{"b"}), pubOf[fmt.Stringer](p2), pubOf[fmt.Stringer](ifaceCode(4)),
		pubOf[fmt.Stringer](ifaceBig{7, 8, 9, 10, 11, 12}), pubOf[fmt.Stringer]((*ifacePtr)(nil)), pubOf[fmt.Stringer](nil),
		pubOf[any](ifaceVal{"c"}), pubOf[any](ifaceCode(5)), pubOf[any](nil), pubOf[any](ifaceZero{}), pubOf[any](p1), pubOf[any](42),
		pubOf[error](ifaceCode(6)), pubOf[error](p2), pubOf[error](nil),
		pubOf[ifaceKinder](ifaceZero{}), pubOf[ifaceKinder](ifaceVal{"d"}), pubOf[ifaceKinder](nil), pubOf[ifaceKinder](p1),
		pubOf[ifaceBoth](ifaceCode(7)), pubOf[ifaceBoth](p2), pubOf[ifaceBoth](nil),
		pubOf[ifaceEmpty](ifaceVal{"e"}), pubOf[ifaceEmpty](nil), pubOf[ifaceEmpty](ifaceBig{}),
	}
	// Different values of the same dynamic types, through the routes made.
	more := []ifacePub{
		pubOf(ifaceVal{"again"}), pubOf[fmt.Stringer](ifaceBig{6, 5, 4, 3, 2, 1}), pubOf[any](ifaceCode(-1)),
		pubOf[ifaceKinder](ifaceVal{"kind"}), pubOf[error](&ifacePtr{"fresh"}),
	}
	all := slices.Concat(pubs, pubs, more)
	for _, p := range all {
		p.do(&b)
	}
	for _, p := range probes {
		want := p.want(all)
		for how, got := range p.collect() {
			if !slices.Equal(got, want) {
				t.Errorf("%s, %s: received\n%q\nwant\n%q", p.name, how, got, want)
			}
		}
	}
}

// A retained type with interface subscriptions of every kind
// beside its own subscriptions, a replay through a From source of an
// interface type, a Record replay and followers; values published as the
// type and through an interface; an interface subscription cancelled on
// the way; Shutdown, after which every subscription counts what reaches it
// as Closed.
func TestARetainedTypeReachesInterfaceSubscriptionsOfEveryKind(t *testing.T) {
	var b topic.Broker
	b.Retain[ifaceRec](topic.Retention{Count: 64, NoTime: true})
	for i := range 5 {
		b.Publish(ifaceRec{i})
	}
	strs, cancelStrs := b.Subscribe(topic.Name[fmt.Stringer]("stringer"), topic.Buffer[fmt.Stringer](64))
	oldest, c1 := b.Subscribe(topic.Name[fmt.Stringer]("oldest"), topic.Buffer[fmt.Stringer](64), topic.Overflow[fmt.Stringer](topic.DropOldest))
	defer c1()
	var lossMu sync.Mutex
	var losses []string
	_, c2 := b.Subscribe(topic.Name[fmt.Stringer]("on loss"), topic.Buffer[fmt.Stringer](0), topic.OnLoss(func(l topic.Loss[fmt.Stringer]) {
		lossMu.Lock()
		defer lossMu.Unlock()
		if l.Value == nil {
			losses = append(losses, l.Cause.String())
			return
		}
		losses = append(losses, l.Cause.String()+" "+l.Value.String())
	}))
	defer c2()
	froms, c3 := b.Subscribe(topic.Name[string]("from"), topic.Buffer[string](64),
		topic.From(func(s fmt.Stringer) (string, bool) { return fmt.Sprintf("%T %s", s, s.String()), true }))
	defer c3()
	anys, c4 := b.Subscribe(topic.Name[any]("any"), topic.Buffer[any](64))
	defer c4()
	own, c5 := b.Subscribe(topic.Name[ifaceRec]("own"), topic.Buffer[ifaceRec](64), topic.Replay[ifaceRec](topic.Earliest()))
	defer c5()
	recs, c6 := b.Subscribe(topic.Name[topic.Record[ifaceRec]]("records"), topic.Buffer[topic.Record[ifaceRec]](64),
		topic.Replay[topic.Record[ifaceRec]](topic.Earliest()))
	defer c6()
	via, c7 := b.Subscribe(topic.Name[ifaceRec]("via"), topic.Buffer[ifaceRec](64), topic.Replay[ifaceRec](topic.Earliest()),
		topic.From(func(s fmt.Stringer) (ifaceRec, bool) {
			r, ok := s.(ifaceRec)
			return ifaceRec{r.N + 1000}, ok
		}))
	defer c7()
	follower := b.Follow[ifaceRec](topic.Name[ifaceRec]("follower"), topic.Replay[ifaceRec](topic.Earliest()))
	defer follower.Close()
	chf, c8 := b.Subscribe(topic.Name[ifaceRec]("channel follower"), topic.Follow[ifaceRec](), topic.Buffer[ifaceRec](64),
		topic.Replay[ifaceRec](topic.Earliest()))
	defer c8()

	for i := 5; i < 10; i++ {
		b.Publish(ifaceRec{i})
	}
	b.Publish(fmt.Stringer(ifaceRec{10}))
	gotStrs := describeAll(takeAll(strs))
	cancelStrs()
	if !isClosed(strs) {
		t.Errorf("stringer: open after cancel")
	}
	b.Publish(ifaceRec{11})

	live := []int{5, 6, 7, 8, 9, 10, 11}
	var wantStrs, wantFrom, wantLoss []string
	for _, n := range live {
		wantStrs = append(wantStrs, fmt.Sprintf("topic_test.ifaceRec rec %d", n))
		wantLoss = append(wantLoss, fmt.Sprintf("full rec %d", n))
	}
	wantFrom = wantStrs
	if !slices.Equal(gotStrs, wantStrs[:6]) {
		t.Errorf("stringer received %q, want %q", gotStrs, wantStrs[:6])
	}
	if got := describeAll(takeAll(oldest)); !slices.Equal(got, wantStrs) {
		t.Errorf("oldest received %q, want %q", got, wantStrs)
	}
	if got := takeAll(froms); !slices.Equal(got, wantFrom) {
		t.Errorf("from received %q, want %q", got, wantFrom)
	}
	var wantAny []any
	for _, n := range live {
		wantAny = append(wantAny, ifaceRec{n})
	}
	if got := takeAll(anys); !slices.Equal(got, wantAny) {
		t.Errorf("any received %v, want %v", got, wantAny)
	}
	ownWant := []ifaceRec{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {11}}
	if got := takeAll(own); !slices.Equal(got, ownWant) {
		t.Errorf("own received %v, want %v", got, ownWant)
	}
	var gotRecs []ifaceRec
	for i, r := range takeAll(recs) {
		if r.Offset != uint64(i) {
			t.Errorf("record %d has offset %d", i, r.Offset)
		}
		gotRecs = append(gotRecs, r.Value)
	}
	if !slices.Equal(gotRecs, ownWant) {
		t.Errorf("records received %v, want %v", gotRecs, ownWant)
	}
	var viaWant []ifaceRec
	for i := range 12 {
		viaWant = append(viaWant, ifaceRec{1000 + i})
	}
	if got := takeAll(via); !slices.Equal(got, viaWant) {
		t.Errorf("via (Replay through a From source of fmt.Stringer) received %v, want %v", got, viaWant)
	}
	buf := make([]topic.Record[ifaceRec], 32)
	var gotF []ifaceRec
	for _, r := range buf[:follower.Read(buf)] {
		gotF = append(gotF, r.Value)
	}
	if !slices.Equal(gotF, ownWant) {
		t.Errorf("follower read %v, want %v", gotF, ownWant)
	}
	var gotCF []ifaceRec
	for range ownWant {
		gotCF = append(gotCF, <-chf) // its pump feeds it: receiving waits for it
	}
	if !slices.Equal(gotCF, ownWant) {
		t.Errorf("channel follower received %v, want %v", gotCF, ownWant)
	}

	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	before := statsByName(t, &b)
	b.Publish(ifaceRec{12})
	b.Publish(fmt.Stringer(ifaceRec{13}))
	after := statsByName(t, &b)
	wantClosed := map[string]uint64{
		"oldest": 2, "on loss": 2, "from": 2, "any": 2, "own": 1, "records": 1, "via": 2,
		"follower": 1, "channel follower": 1,
	}
	for name, want := range wantClosed {
		if got := after[name].Lost.Closed - before[name].Lost.Closed; got != want {
			t.Errorf("%s: %d publications after Shutdown counted Closed, want %d", name, got, want)
		}
	}
	lossMu.Lock()
	wantLoss = append(wantLoss, "closed rec 12", "closed rec 13")
	if !slices.Equal(losses, wantLoss) {
		t.Errorf("on loss: OnLoss received %q, want %q", losses, wantLoss)
	}
	lossMu.Unlock()
}

// Handlers of interface types (plain subscriptions sent to by
// boxedOut.send, their queue their channel) receive the dynamic values, and
// cancelling one by its stop while publishers run closes it cleanly.
func TestInterfaceHandlersReceiveTheDynamicValue(t *testing.T) {
	var b topic.Broker
	var mu sync.Mutex
	var got []string
	stop := b.Handle(func(_ context.Context, s fmt.Stringer) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%T %s", s, s.String()))
		return nil
	}, topic.Buffer[fmt.Stringer](64))
	var kinds []string
	stopKinds := b.Handle(func(_ context.Context, k ifaceKinder) error {
		mu.Lock()
		defer mu.Unlock()
		kinds = append(kinds, fmt.Sprintf("%T %d", k, k.Kind()))
		return nil
	}, topic.Buffer[ifaceKinder](64))
	defer stopKinds()
	b.Publish(ifaceVal{"a"})
	b.Publish(&ifacePtr{"bb"})
	b.Publish(fmt.Stringer(ifaceCode(3)))
	b.Publish(ifaceKinder(ifaceZero{}))
	b.Publish(any(&ifacePtr{"ccc"}))
	b.Publish(ifaceBig{1})
	if err := topictestSettle(&b); err != nil {
		t.Fatal(err)
	}
	stop()
	b.Publish(ifaceVal{"after stop"})
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"topic_test.ifaceVal val a", "*topic_test.ifacePtr ptr bb", "topic_test.ifaceCode code 3", "*topic_test.ifacePtr ptr ccc", "topic_test.ifaceBig big [1 0 0 0 0 0]"}
	if !slices.Equal(got, want) {
		t.Errorf("the fmt.Stringer handler received %q, want %q", got, want)
	}
	wantKinds := []string{"topic_test.ifaceVal 101", "*topic_test.ifacePtr 202", "topic_test.ifaceZero 0", "*topic_test.ifacePtr 203", "topic_test.ifaceVal 110"}
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("the ifaceKinder handler received %q, want %q", kinds, wantKinds)
	}
}

func topictestSettle(b *topic.Broker) error { return b.Settle(context.Background()) }

// ifaceKept is retained by
// TestARetainedPublicationAfterShutdownIsCountedOnceOnAnInterfaceSubscription.
type ifaceKept struct{ N int }

// After Shutdown, a publication of a retained type is counted
// Closed once on a subscription to any (or to an empty interface, or with a
// From source of any), as it would have reached it once: live, such a
// subscription receives the value, never its Record (retain.go
// sendOrdered).
func TestARetainedPublicationAfterShutdownIsCountedOnceOnAnInterfaceSubscription(t *testing.T) {
	var b topic.Broker
	b.Retain[ifaceKept](topic.Retention{Count: 8, NoTime: true})
	anys, c1 := b.Subscribe(topic.Name[any]("any"), topic.Buffer[any](8))
	defer c1()
	empties, c2 := b.Subscribe(topic.Name[ifaceEmpty]("empty"), topic.Buffer[ifaceEmpty](8))
	defer c2()
	froms, c3 := b.Subscribe(topic.Name[string]("from any"), topic.Buffer[string](8),
		topic.From(func(x any) (string, bool) { return fmt.Sprintf("%T", x), true }))
	defer c3()
	b.Publish(ifaceKept{1})
	if got := takeAll(anys); !slices.Equal(got, []any{ifaceKept{1}}) {
		t.Errorf("any received %v live, want [{1}]", got)
	}
	if got := len(takeAll(empties)); got != 1 {
		t.Errorf("empty received %d values live, want 1", got)
	}
	if got := takeAll(froms); !slices.Equal(got, []string{"topic_test.ifaceKept"}) {
		t.Errorf("from any received %q live, want [topic_test.ifaceKept]", got)
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.Publish(ifaceKept{2})
	for name, st := range statsByName(t, &b) {
		if st.Lost != (topic.Lost{Closed: 1}) {
			t.Errorf("%s: one publication after Shutdown counted %+v, want Closed: 1", name, st.Lost)
		}
	}
}
