package topics

import (
	"go/types"
	"slices"
	"strings"
	"testing"
)

// program is a Program of endpoints in view, of the types given.
func program(types map[string]TypeInfo, eps ...Endpoint) *Program {
	p := &Program{}
	for i := range eps {
		eps[i].pos = 1 // in view
	}
	p.Add(eps, types)
	return p
}

func checks(p *Program) []string {
	var out []string
	for _, f := range p.Check(func(Endpoint) bool { return true }) {
		out = append(out, f.Check+" "+f.At.Type)
	}
	return out
}

func TestAnInterfaceReceivesTheTypesWithItsMethods(t *testing.T) {
	types := map[string]TypeInfo{
		"p.Stringer": {Iface: true, Methods: []string{"String()(string)"}},
		"p.Name":     {Methods: []string{"Len()(int)", "String()(string)"}},
		"p.Count":    {Methods: []string{"String()(int)"}},
		"any":        {Iface: true},
	}
	p := program(types)
	for _, c := range []struct {
		recv, pub string
		want      bool
	}{
		{"p.Stringer", "p.Name", true},
		{"p.Stringer", "p.Count", false}, // the same name, another signature
		{"any", "p.Count", true},
		{"p.Name", "p.Stringer", false},
		{Unknown, "p.Count", true},
	} {
		if got := p.Matches(c.recv, c.pub); got != c.want {
			t.Errorf("Matches(%s, %s) = %v, want %v", c.recv, c.pub, got, c.want)
		}
	}
}

func TestAPublicationNothingReceivesIsReportedOncePerType(t *testing.T) {
	p := program(map[string]TypeInfo{"p.T": {}},
		Endpoint{Kind: Publish, Type: "p.T", Pos: "a.go:1:1"},
		Endpoint{Kind: Publish, Type: "p.T", Pos: "a.go:2:1"})
	if got, want := checks(p), []string{"unreceived p.T"}; !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
}

func TestAPointerPublishedWhereTheValueIsReceivedIsReportedAtThePublication(t *testing.T) {
	p := program(map[string]TypeInfo{"p.T": {}, "*p.T": {}},
		Endpoint{Kind: Subscribe, Type: "p.T", Pos: "a.go:1:1"},
		Endpoint{Kind: Publish, Type: "*p.T", Pos: "a.go:2:1"})
	if got, want := checks(p), []string{"pointervalue *p.T"}; !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
}

func TestAnUnknownPublicationSilencesUnpublished(t *testing.T) {
	p := program(map[string]TypeInfo{"p.T": {}},
		Endpoint{Kind: Subscribe, Type: "p.T", Pos: "a.go:1:1"},
		Endpoint{Kind: Publish, Type: Unknown, Pos: "b.go:1:1"})
	if got := checks(p); len(got) > 0 {
		t.Errorf("findings %v, want none", got)
	}
}

func TestAGenericPublicationCountsForEveryInstance(t *testing.T) {
	p := program(map[string]TypeInfo{"p.Box[int]": {Origin: "p.Box"}},
		Endpoint{Kind: Subscribe, Type: "p.Box[int]", Pos: "a.go:1:1"},
		Endpoint{Kind: Publish, Type: "p.Box", Generic: true, Pos: "b.go:1:1"})
	if got := checks(p); len(got) > 0 {
		t.Errorf("findings %v, want none", got)
	}
}

func TestPositionsSortByLineAsANumber(t *testing.T) {
	if comparePos("a.go:9:1", "a.go:10:1") >= 0 || comparePos("a.go:10:2", "a.go:10:10") >= 0 {
		t.Error("positions compare as text")
	}
}

func TestATestsEndpointsCountForTheTestsOnly(t *testing.T) {
	p := program(map[string]TypeInfo{"p.T": {}, "p.U": {}},
		Endpoint{Kind: Publish, Type: "p.T", Pos: "a.go:1:1"},
		Endpoint{Kind: Subscribe, Type: "p.T", Pos: "a_test.go:1:1"},
		Endpoint{Kind: Subscribe, Type: "p.U", Pos: "a.go:2:1"},
		Endpoint{Kind: Publish, Type: "p.U", Pos: "a_test.go:2:1"})
	if got, want := checks(p), []string{"unreceived p.T", "unpublished p.U"}; !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
}

func TestAFromFeedsItsOwnSubscriptionWhenItsSourceIsPublished(t *testing.T) {
	types := map[string]TypeInfo{"p.C": {}, "p.F": {}}
	p := program(types,
		Endpoint{Kind: Subscribe, Type: "p.F", Pos: "a.go:1:1"},
		Endpoint{Kind: Produce, Type: "p.F", Pos: "a.go:1:9", Of: "a.go:1:1"},
		Endpoint{Kind: Source, Type: "p.C", Pos: "a.go:1:9", Of: "a.go:1:1"},
		Endpoint{Kind: Subscribe, Type: "p.F", Pos: "a.go:2:1"})
	if got, want := checks(p), []string{"unpublished p.F", "unpublished p.F"}; !slices.Equal(got, want) {
		t.Errorf("nothing publishes p.C: findings %v, want %v", got, want)
	}
	p.Add([]Endpoint{{Kind: Publish, Type: "p.C", Pos: "b.go:1:1", pos: 1}}, nil)
	if got, want := checks(p), []string{"unpublished p.F"}; !slices.Equal(got, want) {
		t.Errorf("p.C published: findings %v, want %v (the subscription without the From)", got, want)
	}
}

// The graph lists the endpoints whose type is not known, so that a reader
// sees why a type they might be is not reported.
func TestTheGraphListsTheEndpointsOfATypeNotKnown(t *testing.T) {
	p := program(map[string]TypeInfo{"p.Lost": {Name: "p.Lost"}},
		Endpoint{Kind: Publish, Type: "p.Lost", Pos: "/m/main.go:3:2"},
		Endpoint{Kind: Subscribe, Type: Unknown, Pos: "/m/main.go:4:2", Via: "p.Recv"},
	)
	var b strings.Builder
	p.WriteText(&b, "/m")
	want := "any type (not known statically)\n  subscribed     main.go:4 via p.Recv\n\np.Lost\n  published      main.go:3\n"
	if b.String() != want {
		t.Errorf("graph:\n%s\nwant:\n%s", b.String(), want)
	}
	if got := checks(p); len(got) != 0 {
		t.Errorf("checks: %v, want none: the subscription may receive p.Lost", got)
	}
}

// A template that needs a type argument an instantiation lacks expands to
// nothing, rather than to a type not known.
func TestATemplateLackingATypeArgumentExpandsToNothing(t *testing.T) {
	x := &Template{Op: tmplNamed, Path: "p", Pkg: "p", Name: "Box", Args: []*Template{{Op: tmplParam, Param: 1}}}
	if _, _, ok := x.expand([]types.Type{types.Typ[types.Int]}); ok {
		t.Error("expanded with too few type arguments")
	}
	if k, ti, ok := x.expand([]types.Type{types.Typ[types.Int], types.Typ[types.String]}); !ok || k != "p.Box[string]" || ti.Origin != "p.Box" || !ti.Unsure {
		t.Errorf("expand = %q %+v %v, want p.Box[string] of origin p.Box, its methods not known", k, ti, ok)
	}
}
