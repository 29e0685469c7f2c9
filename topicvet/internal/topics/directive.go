package topics

import (
	"go/ast"
	"go/token"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// A directive silences checks on its line and the line below:
//
//	//topicvet:ignore check[,check...] -- reason
//
// The reason is required: a directive without one silences nothing.
const directive = "//topicvet:ignore "

// ignored maps a file and line to the checks silenced there.
type ignored map[string]map[int][]string

func directives(fset *token.FileSet, files []*ast.File) ignored {
	ig := ignored{}
	for _, f := range files {
		for _, g := range f.Comments {
			for _, c := range g.List {
				rest, ok := strings.CutPrefix(c.Text, directive)
				if !ok {
					continue
				}
				checks, reason, ok := strings.Cut(rest, "--")
				if !ok || strings.TrimSpace(reason) == "" {
					continue
				}
				p := fset.Position(c.Slash)
				if ig[p.Filename] == nil {
					ig[p.Filename] = map[int][]string{}
				}
				for ch := range strings.SplitSeq(checks, ",") {
					ch = strings.TrimSpace(ch)
					ig[p.Filename][p.Line] = append(ig[p.Filename][p.Line], ch)
					ig[p.Filename][p.Line+1] = append(ig[p.Filename][p.Line+1], ch)
				}
			}
		}
	}
	return ig
}

// A Reporter reports the diagnostics of one check in one pass, but those a
// directive silences.
type Reporter struct {
	pass  *analysis.Pass
	check string
	ig    ignored
}

// NewReporter returns the Reporter of check in pass.
func NewReporter(pass *analysis.Pass, check string) *Reporter {
	return &Reporter{pass: pass, check: check, ig: directives(pass.Fset, pass.Files)}
}

// Report reports msg at pos unless it is silenced.
func (r *Reporter) Report(pos token.Pos, msg string) {
	p := r.pass.Fset.Position(pos)
	if slices.Contains(r.ig[p.Filename][p.Line], r.check) {
		return
	}
	r.pass.Report(analysis.Diagnostic{Pos: pos, Category: r.check, Message: msg})
}
