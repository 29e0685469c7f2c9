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
// test programs of the whole-program checks in each format, and compares
// it with testdata/graph/program.<format> (go test -update rewrites them).
func TestGraphWritesTheGoldenGraphOfATestProgram(t *testing.T) {
	testdata, err := filepath.Abs("../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GO111MODULE=off", "GOPATH="+testdata, "GOFLAGS=")
	t.Chdir(filepath.Join(testdata, "src"))
	dir, _ := os.Getwd()
	prog, err := load([]string{"program", "pointervalue"}, false, env)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "dot", "mermaid"} {
		var out bytes.Buffer
		writers[format](prog, &out, dir)
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
	}
}

// TestGraphRefusesAnUnknownFormat checks the usage of the command.
func TestGraphRefusesAnUnknownFormat(t *testing.T) {
	var out, errs bytes.Buffer
	if code := graphMain([]string{"-format", "svg", "./..."}, &out, &errs, nil); code != 2 || out.Len() > 0 {
		t.Errorf("topicvet graph -format svg exited with %d, printed %q; want 2 and nothing", code, out.String())
	}
}
