package natsbridge_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/seedaa7df82c/topic/internal/docscheck"
)

// The Go code blocks of the package's doc comments compile against the
// tree.
func TestTheDocsCompile(t *testing.T) {
	files, err := docscheck.Files(false, ".")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docscheck.Block
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := docscheck.Comments("natsbridge/"+filepath.Base(f), src)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	n := docscheck.Check(t, blocks, docscheck.Env{
		Imports: []string{
			"context", "log", "time",
			"github.com/nats-io/nats.go",
			"github.com/nats-io/nats.go/jetstream",
			"github.com/seedaa7df82c/topic",
			"github.com/seedaa7df82c/topic/natsbridge",
		},
		Decls: `
type Order struct{ ID int }

var url string

func logError(*natsbridge.Error) {}
`,
		Locals: "var b topic.Broker\nctx := context.Background()\n",
	})
	if n == 0 {
		t.Error("no Go block found in the doc comments")
	}
	t.Logf("%d blocks checked", n)
}
