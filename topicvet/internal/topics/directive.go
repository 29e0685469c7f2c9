package topics

import (
	"go/ast"
	"go/token"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// A directive silences checks on its line and the line below, or in a
// whole function when it is in the function's doc comment:
//
//	//topicvet:ignore check[,check...] -- reason
//
// The reason is required: a directive without one silences nothing.
const directive = "//topicvet:ignore "

// ignored maps a file and line to the checks silenced there.
type ignored map[string]map[int][]string

// checksOf returns the checks a directive comment names, none if c is not
// one or gives no reason.
func checksOf(c *ast.Comment) []string {
	rest, ok := strings.CutPrefix(c.Text, directive)
	if !ok {
		return nil
	}
	checks, reason, ok := strings.Cut(rest, "--")
	if !ok || strings.TrimSpace(reason) == "" {
		return nil
	}
	var out []string
	for ch := range strings.SplitSeq(checks, ",") {
		out = append(out, strings.TrimSpace(ch))
	}
	return out
}

func directives(fset *token.FileSet, files []*ast.File) ignored {
	ig := ignored{}
	add := func(file string, from, to int, checks []string) {
		if ig[file] == nil {
			ig[file] = map[int][]string{}
		}
		for l := from; l <= to; l++ {
			ig[file][l] = append(ig[file][l], checks...)
		}
	}
	for _, f := range files {
		for _, g := range f.Comments {
			for _, c := range g.List {
				if checks := checksOf(c); checks != nil {
					p := fset.Position(c.Slash)
					add(p.Filename, p.Line, p.Line+1, checks)
				}
			}
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Doc == nil {
				continue
			}
			for _, c := range fd.Doc.List {
				if checks := checksOf(c); checks != nil {
					from, to := fset.Position(fd.Pos()), fset.Position(fd.End())
					add(from.Filename, from.Line, to.Line, checks)
				}
			}
		}
	}
	return ig
}

// A Reporter reports the diagnostics of one check in one pass, but those a
// directive silences.
type Reporter struct {
	pass      *analysis.Pass
	check     string
	ig        ignored
	generated map[string]bool // the files the pass holds that are generated
}

// NewReporter returns the Reporter of check in pass.
func NewReporter(pass *analysis.Pass, check string) *Reporter {
	r := &Reporter{pass: pass, check: check, ig: directives(pass.Fset, pass.Files), generated: map[string]bool{}}
	for _, f := range pass.Files {
		if ast.IsGenerated(f) {
			r.generated[pass.Fset.Position(f.Pos()).Filename] = true
		}
	}
	return r
}

// Report reports msg at pos unless it is silenced, or in a generated
// file, which no one would edit to fix it.
func (r *Reporter) Report(pos token.Pos, msg string) {
	p := r.pass.Fset.Position(pos)
	if r.generated[p.Filename] || slices.Contains(r.ig[p.Filename][p.Line], r.check) {
		return
	}
	r.pass.Report(analysis.Diagnostic{Pos: pos, Category: r.check, Message: msg})
}
