package topics

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// A Program is the endpoints of the packages in view: a package and every
// package it imports, transitively.
type Program struct {
	Endpoints []Endpoint
	Types     map[string]TypeInfo
}

// Add adds the endpoints and types of c (or of a fact) to the program,
// each endpoint once.
func (p *Program) Add(eps []Endpoint, types map[string]TypeInfo) {
	if p.Types == nil {
		p.Types = map[string]TypeInfo{}
	}
	seen := make(map[string]bool, len(p.Endpoints))
	for _, e := range p.Endpoints {
		seen[e.key()] = true
	}
	for _, e := range eps {
		if !seen[e.key()] {
			seen[e.key()] = true
			p.Endpoints = append(p.Endpoints, e)
		}
	}
	for k, t := range types {
		// A method set known wins over one not known, whatever the order.
		if old, ok := p.Types[k]; ok && !old.Unsure && t.Unsure {
			continue
		}
		p.Types[k] = t
	}
}

// Sort orders the endpoints by type, kind and position, for output that
// does not depend on the order packages were analysed in.
func (p *Program) Sort() {
	slices.SortFunc(p.Endpoints, func(a, b Endpoint) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Kind, b.Kind), comparePos(a.Pos, b.Pos), cmp.Compare(a.Via, b.Via))
	})
}

// comparePos orders file:line:col positions by file, then by line and
// column as numbers.
func comparePos(a, b string) int {
	fa, la, ca := splitPos(a)
	fb, lb, cb := splitPos(b)
	return cmp.Or(cmp.Compare(fa, fb), cmp.Compare(la, lb), cmp.Compare(ca, cb))
}

func splitPos(s string) (file string, line, col int) {
	i := strings.LastIndexByte(s, ':')
	j := strings.LastIndexByte(s[:max(i, 0)], ':')
	if i < 0 || j < 0 {
		return s, 0, 0
	}
	fmt.Sscan(s[j+1:i], &line)
	fmt.Sscan(s[i+1:], &col)
	return s[:j], line, col
}

// Matches reports whether a receiver of type recv is given a value
// published as pub: the types are one, or recv is an interface the
// concrete pub implements (any: every type).
func (p *Program) Matches(recv, pub string) bool {
	if recv == pub || recv == Unknown {
		return true
	}
	r, p2 := p.Types[recv], p.Types[pub]
	if !r.Iface || p2.Iface {
		return false
	}
	if p2.Unsure {
		return true // its methods are not known: it may implement recv
	}
	for _, m := range r.Methods {
		if _, ok := slices.BinarySearch(p2.Methods, m); !ok {
			return false
		}
	}
	return true
}

// Receivers returns the endpoints that receive a publication of the
// concrete type pub.
func (p *Program) Receivers(pub string) []Endpoint {
	var out []Endpoint
	for _, e := range p.Endpoints {
		if e.Kind.Receives() && (p.Matches(e.Type, pub) || p.instanceOf(pub, e)) {
			out = append(out, e)
		}
	}
	return out
}

// Publishers returns the endpoints that publish typ itself, or make it for
// a subscription (the Pub of a From).
func (p *Program) Publishers(typ string) []Endpoint {
	var out []Endpoint
	for _, e := range p.Endpoints {
		if (e.Kind == Publish || e.Kind == Produce) && (e.Type == typ || e.Type == Unknown || p.instanceOf(typ, e)) {
			out = append(out, e)
		}
	}
	return out
}

// fed reports whether something publishes to the subscription e: a
// publication of its type, or a From of its own (or one whose subscription
// is not known) whose source is published.
func (p *Program) fed(e Endpoint) bool {
	for _, pub := range p.Publishers(e.Type) {
		switch {
		case pub.Kind != Produce, pub.Of == "":
			return true
		case pub.Of == e.Pos:
			for _, src := range p.Endpoints {
				if src.Kind == Source && src.Pos == pub.Pos && p.sourcePublished(src) {
					return true
				}
			}
		}
	}
	return false
}

// sourcePublished reports whether something publishes a value the From
// source src receives.
func (p *Program) sourcePublished(src Endpoint) bool {
	if src.Type == Unknown || src.Generic {
		return true
	}
	for _, pub := range p.Endpoints {
		if pub.Kind == Publish && (pub.Type == Unknown || p.Matches(src.Type, pub.Type) || p.instanceOf(src.Type, pub) || pub.Generic && p.Types[src.Type].Iface) {
			return true
		}
	}
	return false
}

// fromSources returns the sources of the From calls written in the
// argument list of the subscription e.
func (p *Program) fromSources(e Endpoint) []Endpoint {
	var out []Endpoint
	for _, src := range p.Endpoints {
		if src.Kind == Source && src.Of == e.Pos {
			out = append(out, src)
		}
	}
	return out
}

// instanceOf reports whether typ is an instance of the generic type of
// the endpoint e.
func (p *Program) instanceOf(typ string, e Endpoint) bool {
	return e.Generic && p.Types[typ].Origin == e.Type
}

// concreteReceivers returns the receivers of typ itself, not through an
// interface.
func (p *Program) concreteReceivers(typ string) []Endpoint {
	var out []Endpoint
	for _, e := range p.Endpoints {
		if e.Kind.Receives() && e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// flip is *T for T, T for *T.
func flip(typ string) string {
	if t, ok := strings.CutPrefix(typ, "*"); ok {
		return t
	}
	return "*" + typ
}

// The names of the whole-program checks, which are their analyzers'.
const (
	Unreceived   = "unreceived"
	Unpublished  = "unpublished"
	PointerValue = "pointervalue"
)

// A Finding is what a whole-program check reports at an endpoint.
type Finding struct {
	Check   string
	At      Endpoint
	Message string
}

// Check returns the findings of the whole-program checks at the endpoints
// inView accepts, in the order of the endpoints:
//
//   - unreceived: a concrete type published that nothing receives, once
//     per type, at its first publication in view;
//   - unpublished: a subscription, handler, follower or read of a concrete
//     type, not of the core, that nothing publishes, nor a From of its
//     own makes out of a published source;
//   - pointervalue: either of those where the other of *T and T would
//     have matched; reported instead of them.
//
// A type published through an interface (an any variable) is not known:
// it is not reported, and it is not counted as a publication of the
// concrete types it might hold (the broker routes it by the interface).
func (p *Program) Check(inView func(Endpoint) bool) []Finding {
	var out []Finding
	reported := map[string]bool{}
	program := p.withoutTests()
	for _, e := range p.Endpoints {
		if !inView(e) || e.Generic || e.Implicit || e.Type == Unknown || p.Types[e.Type].Iface {
			continue
		}
		// A test is no part of the program: what a test receives or
		// publishes counts for the tests only.
		q := p
		if !e.inTestFile() {
			q = program
		}
		switch {
		case e.Kind == Publish:
			if q.Types[e.Type].Core {
				continue // the broker's dead letters, or a record: not the user's to receive
			}
			if reported[e.Type] || len(q.Receivers(e.Type)) > 0 {
				continue
			}
			reported[e.Type] = true
			if other := q.concreteReceivers(flip(e.Type)); len(other) > 0 {
				out = append(out, Finding{PointerValue, e, fmt.Sprintf("%s is published, but only %s is received (%s): a subscription receives its type only",
					q.name(e.Type), q.name(flip(e.Type)), shortPos(other[0].Pos))})
				continue
			}
			out = append(out, Finding{Unreceived, e, fmt.Sprintf("%s is published, but nothing in the program receives it", q.name(e.Type))})
		case e.Kind.Subscribes():
			if q.Types[e.Type].Core || q.fed(e) {
				continue
			}
			if src := q.fromSources(e); len(src) > 0 {
				out = append(out, Finding{Unpublished, e, fmt.Sprintf("%s is received (%s), but nothing in the program publishes it, nor %s, which its From makes it from",
					q.name(e.Type), e.Kind, q.name(src[0].Type))})
				continue
			}
			if other := q.Publishers(flip(e.Type)); len(other) > 0 {
				if slices.ContainsFunc(other, inView) && len(q.Receivers(flip(e.Type))) == 0 {
					continue // reported at the publication, which nothing receives
				}
				out = append(out, Finding{PointerValue, e, fmt.Sprintf("%s is received, but %s is published (%s): a subscription receives its type only",
					q.name(e.Type), q.name(flip(e.Type)), shortPos(other[0].Pos))})
				continue
			}
			out = append(out, Finding{Unpublished, e, fmt.Sprintf("%s is received (%s), but nothing in the program publishes it", q.name(e.Type), e.Kind)})
		}
	}
	return out
}

// inTestFile reports whether the endpoint is in a _test.go file.
func (e Endpoint) inTestFile() bool {
	file, _, _ := splitPos(e.Pos)
	return strings.HasSuffix(file, "_test.go")
}

// withoutTests is p without the endpoints of test files and of the
// packages only tests import: the program as it runs, which go vet
// analyses with its tests.
func (p *Program) withoutTests() *Program {
	q := &Program{Types: p.Types}
	for _, e := range p.Endpoints {
		if !e.inTestFile() && !e.TestOnly {
			q.Endpoints = append(q.Endpoints, e)
		}
	}
	return q
}

// name is typ as a reader writes it.
func (p *Program) name(typ string) string {
	if t, ok := p.Types[typ]; ok && t.Name != "" {
		return t.Name
	}
	return typ
}

// Name is typ as a reader writes it (package names, not paths).
func (p *Program) Name(typ string) string { return p.name(typ) }

// shortPos is pos as file.go:line, for a message.
func shortPos(pos string) string {
	file, line, _ := splitPos(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(file), line)
}
