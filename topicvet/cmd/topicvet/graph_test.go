package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/graph")

// TestGraphWritesTheGoldenGraphOfATestProgram draws the graph of the
// test program of the whole-program checks in each format, and compares
// it with testdata/graph/program.<format> (go test -update rewrites them).
func TestGraphWritesTheGoldenGraphOfATestProgram(t *testing.T) {
	testdata, err := filepath.Abs("../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GO111MODULE=off", "GOPATH="+filepath.Join(testdata), "GOFLAGS=")
	t.Chdir(filepath.Join(testdata, "src"))
	for _, format := range []string{"text", "dot", "mermaid"} {
		t.Run(format, func(t *testing.T) {
			var out, errs bytes.Buffer
			if code := graphMain([]string{"-format", format, "program", "pointervalue"}, &out, &errs, env); code != 0 {
				t.Fatalf("topicvet graph exited with %d: %s", code, errs.String())
			}
			golden := filepath.Join(testdata, "graph", "program."+format)
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("topicvet graph -format %s differs from %s:\n%s", format, golden, out.String())
			}
		})
	}
}
