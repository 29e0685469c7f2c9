package topicotel_test

import (
	"os"
	"testing"

	"github.com/seedaa7df82c/topic/internal/docscheck"
)

// The Go code blocks of the package's doc comments compile against the
// tree. (The blocks of the README and docs/ that serve the metrics to
// Prometheus are checked in ./internal/promtest.)
func TestTheDocsCompile(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := docscheck.Comments("topicotel/doc.go", src)
	if err != nil {
		t.Fatal(err)
	}
	n := docscheck.Check(t, blocks, docscheck.Env{
		Imports: []string{
			"context", "log",
			"go.opentelemetry.io/otel/metric",
			"github.com/seedaa7df82c/topic",
			"github.com/seedaa7df82c/topic/topicotel",
		},
		Decls:  "var provider metric.MeterProvider\n",
		Locals: "var b topic.Broker\nctx := context.Background()\n",
	})
	t.Logf("%d blocks of the doc comments checked", n)
}
