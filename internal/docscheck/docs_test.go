package docscheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedaa7df82c/topic/internal/docscheck"

	// What the blocks are checked against: imported, so that the go
	// command runs this test again when they change.
	_ "github.com/seedaa7df82c/topic"
	_ "github.com/seedaa7df82c/topic/topicdebug"
	_ "github.com/seedaa7df82c/topic/topictest"
)

// root is the repository's root, from this package's folder.
const root = "../.."

// env is what the README's blocks and the doc comments of the core module
// use without declaring: a user's types and functions, a broker b and a
// context ctx.
var env = docscheck.Env{
	Imports: []string{
		"context", "encoding/json", "errors", "expvar", "fmt", "log", "log/slog", "net/http", "os", "testing", "time",
		"github.com/seedaa7df82c/topic",
		"github.com/seedaa7df82c/topic/topicdebug",
		"github.com/seedaa7df82c/topic/topictest",
	},
	Decls: `
type (
	Order      struct{ ID, Total int }
	Price      struct{ Cents int }
	Tick       struct{ N int }
	Celsius    float64
	Fahrenheit float64
	Shipped    struct{ Order int }
)

func charge(context.Context, Order) error { return nil }
func bill(Order)                           {}
func startShipping(*topic.Broker)          {}

var from uint64
`,
	Locals: "var b topic.Broker\nctx := context.Background()\n",
}

// Every Go block of the README and of docs/, and every Go code block of the doc comments
// of the core module's packages, compiles against the tree; a README block
// marked to run is an example that go test runs.
func TestTheDocsCompile(t *testing.T) {
	blocks, err := docscheck.Guides(root)
	if err != nil {
		t.Fatal(err)
	}
	var partial, elsewhere, run int
	for _, b := range blocks {
		switch kind, arg, _ := strings.Cut(b.Marker, " "); kind {
		case "":
		case "partial":
			partial++
		case "module":
			elsewhere++
		case "run":
			run++
			if err := inExample(b, arg); err != nil {
				t.Error(err)
			}
		default:
			t.Errorf("%v: unknown marker %q", b, b.Marker)
		}
	}
	inGuides := len(blocks)

	files, err := docscheck.Files(false, root, root+"/topictest", root+"/topicdebug")
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(abs, f)
		bs, err := docscheck.Comments(filepath.ToSlash(rel), src)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	n := docscheck.Check(t, blocks, env)
	t.Logf("%d blocks checked: %d of the %d of the README and docs/ (%d partial, %d checked by another module, %d run as examples), %d of the doc comments",
		n+run, inGuides-partial-elsewhere, inGuides, partial, elsewhere, run, len(blocks)-inGuides)
}

// inExample checks that block b is the example function named name of the
// root package's tests.
func inExample(b docscheck.Block, name string) error {
	files, err := docscheck.Files(true, root)
	if err != nil {
		return err
	}
	var srcs [][]byte
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		srcs = append(srcs, src)
	}
	return docscheck.InExample(b, name, srcs...)
}
