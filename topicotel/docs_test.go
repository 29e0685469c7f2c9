package topicotel_test

import (
	"os"
	"testing"

	"github.com/seedaa7df82c/topic/internal/docscheck"
)

// The blocks of the README and docs/ that use this module, and the Go code blocks of the
// package's doc comments, compile against the tree.
func TestTheDocsCompile(t *testing.T) {
	guides, err := docscheck.Guides("..")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docscheck.Block
	for _, b := range guides {
		if b.Marker == "module topicotel" {
			b.Marker = "" // checked here
			blocks = append(blocks, b)
		}
	}
	if len(blocks) == 0 {
		t.Fatal("neither the README nor docs/ has a block marked <!-- docs: module topicotel -->")
	}
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := docscheck.Comments("topicotel/doc.go", src)
	if err != nil {
		t.Fatal(err)
	}
	blocks = append(blocks, docs...)
	n := docscheck.Check(t, blocks, docscheck.Env{
		Imports: []string{
			"context", "log", "net/http",
			"github.com/prometheus/client_golang/prometheus",
			"github.com/prometheus/client_golang/prometheus/promhttp",
			"otelprom go.opentelemetry.io/otel/exporters/prometheus",
			"go.opentelemetry.io/otel/metric",
			"sdkmetric go.opentelemetry.io/otel/sdk/metric",
			"github.com/seedaa7df82c/topic",
			"github.com/seedaa7df82c/topic/topicotel",
		},
		Decls:  "var provider metric.MeterProvider\n",
		Locals: "var b topic.Broker\nctx := context.Background()\n",
	})
	t.Logf("%d blocks checked: %d of the README and docs/, %d of the doc comments", n, n-len(docs), len(docs))
}
