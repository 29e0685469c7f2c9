// Package docscheck holds the Go a user reads in the documentation to the
// compiler's rules: every ```go block of a Markdown file, and every code
// block of a package's doc comments that is Go, is type-checked against the
// packages it uses, so that a snippet cannot drift from the API. The tests
// of the modules of this repository call it (internal packages are
// importable by every package below the root's path, whatever its module).
//
// A Markdown block says what it is with an HTML comment on the line before
// its fence:
//
//	<!-- docs: partial -->        a listing, not a program: not checked
//	<!-- docs: run Example -->    run by go test: its lines are those of the
//	                              example function Example, whose output
//	                              go test checks
//	<!-- docs: module topicotel --> checked by the tests of that module
//
// A block without a marker is checked here. A block is either declarations
// (it parses as a Go file's body) or statements, which are checked as the
// body of a function in which Env.Locals are declared.
package docscheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A Block is a piece of Go from the documentation.
type Block struct {
	File   string // where it is, for messages
	Line   int    // the line of its first line of code in File
	Code   string
	Marker string // from its docs: comment, or empty
}

func (b Block) String() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

var (
	fence  = regexp.MustCompile("^```go\\s*$")
	marker = regexp.MustCompile(`^<!--\s*docs:\s*(.*?)\s*-->\s*$`)
)

// Markdown returns the ```go blocks of the Markdown src, read from file.
func Markdown(file string, src []byte) []Block {
	var blocks []Block
	lines := strings.Split(string(src), "\n")
	for i := 0; i < len(lines); i++ {
		if !fence.MatchString(lines[i]) {
			continue
		}
		b := Block{File: file, Line: i + 2}
		if i > 0 {
			if m := marker.FindStringSubmatch(lines[i-1]); m != nil {
				b.Marker = m[1]
			}
		}
		var code []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			code = append(code, lines[i])
		}
		b.Code = strings.Join(code, "\n") + "\n"
		blocks = append(blocks, b)
	}
	return blocks
}

// Guides returns the ```go blocks of the guides a user reads: README.md
// and every Markdown file of docs/, in the repository whose root is root,
// each block named by its file's path from there.
func Guides(root string) ([]Block, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	var blocks []Block
	for _, f := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(root, f)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, Markdown(filepath.ToSlash(rel), src)...)
	}
	return blocks, nil
}

// Comments returns the code blocks of the doc comments of the Go source
// src, read from file, that parse as Go statements or declarations; a
// code block that does not (the JSON or log lines a comment shows) is
// text, and not returned. The package's comment and those of its
// declarations, their fields and methods included, are read.
func Comments(file string, src []byte) ([]Block, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var blocks []Block
	var p comment.Parser
	for _, g := range docComments(f) {
		var lines []int // the file's line of each line of the comment's text
		for _, c := range g.List {
			line := fset.Position(c.Slash).Line
			for range strings.Count(c.Text, "\n") + 1 {
				lines = append(lines, line)
				line++
			}
		}
		text := g.Text()
		for _, blk := range p.Parse(text).Content {
			code, ok := blk.(*comment.Code)
			if !ok || !isGo(code.Text) {
				continue
			}
			blocks = append(blocks, Block{File: file, Line: lineOf(text, code.Text, lines), Code: code.Text})
		}
	}
	return blocks, nil
}

// docComments returns the doc comments of f: its package's, and those of
// its declarations and of the fields and methods they declare.
func docComments(f *ast.File) []*ast.CommentGroup {
	var docs []*ast.CommentGroup
	ast.Inspect(f, func(n ast.Node) bool {
		var g *ast.CommentGroup
		switch x := n.(type) {
		case *ast.File:
			g = x.Doc
		case *ast.FuncDecl:
			g = x.Doc
		case *ast.GenDecl:
			g = x.Doc
		case *ast.TypeSpec:
			g = x.Doc
		case *ast.ValueSpec:
			g = x.Doc
		case *ast.Field:
			g = x.Doc
		case *ast.BlockStmt:
			return false // the comments of function bodies are not docs
		}
		if g != nil {
			docs = append(docs, g)
		}
		return true
	})
	return docs
}

// lineOf returns the file's line of the first line of code in text, given
// the file's line of each line of the comment (a close guess if the code's
// first line is found more than once: the first).
func lineOf(text, code string, lines []int) int {
	first, _, _ := strings.Cut(code, "\n")
	for i, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == strings.TrimSpace(first) && i < len(lines) {
			return lines[i]
		}
	}
	if len(lines) > 0 {
		return lines[0]
	}
	return 0
}

// isGo reports whether code parses as Go declarations or statements.
func isGo(code string) bool {
	_, decls := parseDecls(code)
	_, stmts := parseStmts(code)
	return decls == nil || stmts == nil
}

func parseDecls(code string) (*ast.File, error) {
	return parser.ParseFile(token.NewFileSet(), "", "package p\n"+code, 0)
}

func parseStmts(code string) (*ast.File, error) {
	return parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() {\n"+code+"\n}\n", 0)
}

// Env is what the blocks may use without declaring it.
type Env struct {
	// Imports are the packages the blocks may use, by import path, or by
	// a name and the path ("otelprom go.opentelemetry.io/otel/exporters/prometheus"):
	// every block sees every one.
	Imports []string
	// Decls are Go declarations of the names the blocks use and do not
	// declare (a type Order, a function charge).
	Decls string
	// Locals are statements before each block of statements, declaring the
	// variables they use (var b topic.Broker, ctx).
	Locals string
}

// Check type-checks each block in env, in one package, and fails t for each
// error, at the block's line; unused variables and imports are not errors
// (a snippet shows one step). It skips the blocks with a marker, and
// returns how many it checked. The packages of env.Imports are read from
// the export data the go command makes for them (go list -export), so a
// block is held to the code of the tree; a test that calls Check imports
// the packages of its module that env names, so that the go command runs
// it again when they change.
func Check(t *testing.T, blocks []Block, env Env) int {
	t.Helper()
	var paths []string
	for _, p := range env.Imports {
		_, path, ok := strings.Cut(p, " ")
		if !ok {
			path = p
		}
		paths = append(paths, path)
	}
	imp, err := exportImporter(paths)
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	line := func() int { return strings.Count(src.String(), "\n") + 1 }
	src.WriteString("package docs\n\nimport (\n")
	for _, p := range env.Imports {
		if name, path, ok := strings.Cut(p, " "); ok {
			fmt.Fprintf(&src, "\t%s %q\n", name, path)
		} else {
			fmt.Fprintf(&src, "\t%q\n", p)
		}
	}
	src.WriteString(")\n\n")
	declsAt := line()
	src.WriteString(env.Decls + "\n")
	type placed struct {
		b     Block
		first int // the generated file's line of the block's first line
	}
	var checked []placed
	for i, b := range blocks {
		if b.Marker != "" {
			continue
		}
		if _, err := parseDecls(b.Code); err == nil {
			fmt.Fprintf(&src, "// %v\n", b)
			checked = append(checked, placed{b, line()})
			src.WriteString(b.Code + "\n")
			continue
		}
		if _, err := parseStmts(b.Code); err != nil {
			t.Errorf("%v: the block is neither Go declarations nor statements (%v); if it is partial on purpose, mark it <!-- docs: partial -->", b, err)
			continue
		}
		fmt.Fprintf(&src, "// %v\nfunc block%d() {\n%s\n{\n", b, i, env.Locals)
		checked = append(checked, placed{b, line()})
		src.WriteString(b.Code + "\n}\n}\n")
	}

	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "docs.go", src.String(), 0)
	if err != nil {
		t.Fatalf("the blocks together do not parse: %v\n%s", err, src.String())
	}
	where := func(pos token.Pos) string {
		l := fset.Position(pos).Line
		for _, p := range slices.Backward(checked) {
			if l >= p.first {
				return fmt.Sprintf("%s:%d", p.b.File, p.b.Line+l-p.first)
			}
		}
		return fmt.Sprintf("the environment's declarations, line %d", l-declsAt+1)
	}
	conf := types.Config{
		Importer: imp,
		Error: func(err error) {
			if e, ok := err.(types.Error); ok {
				if !e.Soft {
					t.Errorf("%s: %s", where(e.Pos), e.Msg)
				}
				return
			}
			t.Error(err)
		},
	}
	_, _ = conf.Check("docs", fset, []*ast.File{f}, nil)
	return len(checked)
}

// InExample reports whether the lines of b's code are, in order and
// together, lines of the function named example in one of the Go source
// files srcs (each line trimmed of its indentation, blank lines aside): so
// that the block runs, and its output is checked, as that example.
func InExample(b Block, example string, srcs ...[]byte) error {
	for _, src := range srcs {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "", src, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name != example || fn.Body == nil {
				continue
			}
			body := trimmed(string(src[fset.Position(fn.Body.Lbrace).Offset:fset.Position(fn.Body.Rbrace).Offset]))
			code := trimmed(b.Code)
			for i := 0; i+len(code) <= len(body); i++ {
				if slices.Equal(body[i:i+len(code)], code) {
					return nil
				}
			}
			return fmt.Errorf("%v: the block's lines are not those of %s", b, example)
		}
	}
	return fmt.Errorf("%v: no function %s", b, example)
}

// trimmed returns the lines of s without their indentation, blank lines
// left out.
func trimmed(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// exportImporter returns an importer of paths and what they import, from
// the export data the go command makes for them. The go command's reads
// are its own: the test that calls Check does not list the module's
// folders itself, which would keep the go command from caching its result.
func exportImporter(paths []string) (types.Importer, error) {
	out, err := goList(append([]string{"-export", "-deps", "-f", "{{if .Export}}{{.ImportPath}}={{.Export}}{{end}}"}, paths...)...)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(line, "="); ok {
			files[path] = file
		}
	}
	return importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	}), nil
}

// Files returns the paths of the Go files of the packages patterns match,
// from the go command: their source files, and with tests their test
// files too. The go command lists the folders, not the test that calls it
// (see exportImporter).
func Files(tests bool, patterns ...string) ([]string, error) {
	format := "{{range .GoFiles}}{{$.Dir}}/{{.}}\n{{end}}"
	if tests {
		format += "{{range .TestGoFiles}}{{$.Dir}}/{{.}}\n{{end}}{{range .XTestGoFiles}}{{$.Dir}}/{{.}}\n{{end}}"
	}
	out, err := goList(append([]string{"-f", format}, patterns...)...)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// goList runs go list with args and returns its output, or an error with
// what it printed on its standard error.
func goList(args ...string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}
