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

// TestGraphOfTheDemoShowsItsTopics draws the graph of the demo program of
// the repository (cmd/topic-demo) and looks for what its doc comment
// says it does: a wildcard subscription on an interface, a From
// transformation, a handler whose failures end as dead letters, followers
// of a retained type. It needs the repository around the module; elsewhere
// it is skipped.
func TestGraphOfTheDemoShowsItsTopics(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !bytes.Contains(b, []byte("module github.com/seedaa7df82c/topic\n")) {
		t.Skip("the repository is not around the module")
	}
	t.Chdir(root)
	prog, err := load([]string{"./cmd/topic-demo"}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	prog.WriteText(&out, root)
	for _, want := range []string{
		"main.OrderPlaced\n  published      cmd/topic-demo/main.go:",
		"  received as    main.Event\n",
		"  made into      main.Revenue by From cmd/topic-demo/main.go:",
		"topic.DeadLetter[main.OrderPlaced]\n",
		"  received as    topic.DeadLettered\n",
		"  followed       cmd/topic-demo/main.go:",
	} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("the demo's graph has no %q:\n%s", want, out.String())
		}
	}
}
