package topics

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

// A Node is one topic of a program's graph, with its endpoints.
type Node struct {
	Type       string // its key
	Name       string
	Iface      bool
	Publishers []Endpoint
	Receivers  []Endpoint // of the type itself
	// Wildcards are the interfaces whose receivers are given the type's
	// publications, by their keys.
	Wildcards []string
	// Froms are the From sources that receive the type and give their
	// subscription another: the Produce endpoint, at the From call.
	Froms []Endpoint
	// Made are the From calls that give a subscription the type, out of
	// another: the Source endpoints, at the From call.
	Made []Endpoint
}

// UnknownName is the name of the graph's node of the endpoints whose type
// is not known (Unknown): each may publish or receive any type, and so
// keeps the checks from reporting the types it might be.
const UnknownName = "any type (not known statically)"

// Graph returns the topics of prog, sorted by name: every type published
// or received, and a node of the endpoints whose type is not known.
func (p *Program) Graph() []Node {
	byType := map[string]*Node{}
	node := func(typ string) *Node {
		n, ok := byType[typ]
		if !ok {
			n = &Node{Type: typ, Name: p.name(typ), Iface: p.Types[typ].Iface}
			if typ == Unknown {
				n.Name = UnknownName
			}
			byType[typ] = n
		}
		return n
	}
	// The endpoints of each From call, by position.
	produce, source := map[string][]Endpoint{}, map[string][]Endpoint{}
	for _, e := range p.Endpoints {
		switch e.Kind {
		case Produce:
			produce[e.Pos] = append(produce[e.Pos], e)
		case Source:
			source[e.Pos] = append(source[e.Pos], e)
		}
	}
	for _, e := range p.Endpoints {
		if e.Generic {
			continue
		}
		n := node(e.Type)
		switch {
		case e.Kind == Publish:
			n.Publishers = append(n.Publishers, e)
		case e.Kind == Source:
			n.Froms = append(n.Froms, produce[e.Pos]...)
		case e.Kind == Produce:
			n.Made = append(n.Made, source[e.Pos]...)
		case e.Kind.Receives():
			n.Receivers = append(n.Receivers, e)
		}
	}
	// An endpoint of some instance of a generic type, in each instance.
	for _, e := range p.Endpoints {
		if !e.Generic {
			continue
		}
		for _, n := range byType {
			if p.Types[n.Type].Origin != e.Type {
				continue
			}
			switch {
			case e.Kind == Publish:
				n.Publishers = append(n.Publishers, e)
			case e.Kind.Receives():
				n.Receivers = append(n.Receivers, e)
			}
		}
	}
	var nodes []Node
	for _, n := range byType {
		if !n.Iface && n.Type != Unknown {
			for _, i := range byType {
				if i.Iface && len(i.Receivers) > 0 && i.Type != n.Type && p.Matches(i.Type, n.Type) {
					n.Wildcards = append(n.Wildcards, i.Type)
				}
			}
			slices.SortFunc(n.Wildcards, func(a, b string) int { return cmp.Compare(p.name(a), p.name(b)) })
		}
		nodes = append(nodes, *n)
	}
	slices.SortFunc(nodes, func(a, b Node) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Type, b.Type)) })
	return nodes
}

// Rel writes pos as file:line, the file relative to dir when it is below
// it.
func Rel(dir, pos string) string {
	file, line, _ := splitPos(pos)
	if r, err := filepath.Rel(dir, file); err == nil && !strings.HasPrefix(r, "..") {
		file = r
	}
	return fmt.Sprintf("%s:%d", filepath.ToSlash(file), line)
}

func placeOf(dir string, e Endpoint) string {
	s := Rel(dir, e.Pos)
	if e.Via != "" {
		s += " via " + e.Via
	}
	if e.Generic {
		s += " (an instance of its generic type)"
	}
	if e.Implicit {
		s += " (if called through an interface)"
	}
	return s
}

// WriteText writes the graph as text: each topic, its publishers, its
// receivers, the interfaces and From sources that receive it.
func (p *Program) WriteText(w io.Writer, dir string) {
	for i, n := range p.Graph() {
		if i > 0 {
			fmt.Fprintln(w)
		}
		kind := ""
		if n.Iface {
			kind = " (interface)"
		}
		fmt.Fprintf(w, "%s%s\n", n.Name, kind)
		for _, e := range n.Publishers {
			fmt.Fprintf(w, "  published      %s\n", placeOf(dir, e))
		}
		for _, e := range n.Receivers {
			fmt.Fprintf(w, "  %-14s %s\n", e.Kind.Done(), placeOf(dir, e))
		}
		for _, t := range n.Wildcards {
			fmt.Fprintf(w, "  received as    %s\n", p.name(t))
		}
		for _, e := range n.Froms {
			fmt.Fprintf(w, "  made into      %s by From %s\n", p.name(e.Type), placeOf(dir, e))
		}
		for _, e := range n.Made {
			fmt.Fprintf(w, "  made from      %s by From %s\n", p.name(e.Type), placeOf(dir, e))
		}
		if len(n.Publishers) == 0 && len(n.Made) == 0 && !n.Iface && n.Type != Unknown && !p.Types[n.Type].Core {
			fmt.Fprintln(w, "  (nothing publishes it)")
		}
	}
}

// WriteDOT writes the graph in Graphviz's language: a box per topic, a
// note per place in the code, an edge from each publisher to its topic and
// from each topic to its receivers, a dashed edge from a type to an
// interface that receives it, and a From edge from a source to the topic
// its subscription is given.
func (p *Program) WriteDOT(w io.Writer, dir string) {
	fmt.Fprintln(w, "digraph topics {")
	fmt.Fprintln(w, "\trankdir=LR;")
	fmt.Fprintln(w, "\tnode [fontname=\"Helvetica\", fontsize=11];")
	fmt.Fprintln(w, "\tedge [fontname=\"Helvetica\", fontsize=9];")
	p.walk(dir, graphWriter{
		topic: func(id, label string, iface bool) {
			style := "rounded,filled\", fillcolor=\"#dbe9f6"
			if iface {
				style = "rounded,dashed"
			}
			fmt.Fprintf(w, "\t%q [label=%q, shape=box, style=\"%s\"];\n", id, label, style)
		},
		site: func(id, label string) {
			fmt.Fprintf(w, "\t%q [label=%q, shape=note, fontsize=9];\n", id, label)
		},
		edge: func(from, to, label string, dashed bool) {
			attr := fmt.Sprintf("label=%q", label)
			if dashed {
				attr += ", style=dashed"
			}
			fmt.Fprintf(w, "\t%q -> %q [%s];\n", from, to, attr)
		},
	})
	fmt.Fprintln(w, "}")
}

// WriteMermaid writes the graph as a Mermaid flowchart, shaped as
// WriteDOT's.
func (p *Program) WriteMermaid(w io.Writer, dir string) {
	fmt.Fprintln(w, "flowchart LR")
	ids := map[string]string{}
	id := func(s string) string {
		if v, ok := ids[s]; ok {
			return v
		}
		ids[s] = fmt.Sprintf("n%d", len(ids))
		return ids[s]
	}
	quote := func(s string) string { return strings.ReplaceAll(s, `"`, "#quot;") }
	p.walk(dir, graphWriter{
		topic: func(key, label string, iface bool) {
			if iface {
				fmt.Fprintf(w, "    %s{{\"%s\"}}\n", id(key), quote(label))
			} else {
				fmt.Fprintf(w, "    %s[\"%s\"]\n", id(key), quote(label))
			}
		},
		site: func(key, label string) { fmt.Fprintf(w, "    %s>\"%s\"]\n", id(key), quote(label)) },
		edge: func(from, to, label string, dashed bool) {
			arrow := "-->"
			if dashed {
				arrow = "-.->"
			}
			fmt.Fprintf(w, "    %s %s|%s| %s\n", id(from), arrow, quote(label), id(to))
		},
	})
}

// graphWriter is what a format does with each node and edge of the graph.
type graphWriter struct {
	topic func(id, label string, iface bool)
	site  func(id, label string)
	edge  func(from, to, label string, dashed bool)
}

// walk hands the graph's nodes, then its edges, to g, in a fixed order.
func (p *Program) walk(dir string, g graphWriter) {
	nodes := p.Graph()
	tid := func(typ string) string { return "t " + typ }
	sid := func(e Endpoint) string {
		_, _, col := splitPos(e.Pos)
		return fmt.Sprintf("s %s:%d", Rel(dir, e.Pos), col)
	}
	sites := map[string]bool{}
	addSite := func(e Endpoint) {
		if !sites[sid(e)] {
			sites[sid(e)] = true
			g.site(sid(e), placeOf(dir, e))
		}
	}
	for _, n := range nodes {
		g.topic(tid(n.Type), n.Name, n.Iface)
	}
	for _, n := range nodes {
		for _, e := range n.Publishers {
			addSite(e)
		}
		for _, e := range n.Receivers {
			addSite(e)
		}
	}
	for _, n := range nodes {
		for _, e := range n.Publishers {
			g.edge(sid(e), tid(n.Type), "publish", false)
		}
		for _, e := range n.Receivers {
			g.edge(tid(n.Type), sid(e), e.Kind.String(), false)
		}
		for _, t := range n.Wildcards {
			g.edge(tid(n.Type), tid(t), "as", true)
		}
		for _, e := range n.Froms {
			g.edge(tid(n.Type), tid(e.Type), "From "+Rel(dir, e.Pos), false)
		}
	}
}
