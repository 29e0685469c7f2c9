package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/seedaa7df82c/topic/topicvet"
	"github.com/seedaa7df82c/topic/topicvet/internal/topics"
)

// writers are the formats of topicvet graph.
var writers = map[string]func(*topics.Program, io.Writer, string){
	"text":    (*topics.Program).WriteText,
	"dot":     (*topics.Program).WriteDOT,
	"mermaid": (*topics.Program).WriteMermaid,
}

// graphMain runs topicvet graph with args, the environment of the go
// command env (nil: this process's), and returns the exit status.
func graphMain(args []string, stdout, stderr io.Writer, env []string) int {
	fs := flag.NewFlagSet("topicvet graph", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "text", "the output: text, dot (Graphviz) or mermaid")
	tests := fs.Bool("test", false, "include the packages' tests")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: topicvet graph [-format text|dot|mermaid] [-test] packages")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	write := writers[*format]
	if write == nil || fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	prog, err := load(fs.Args(), *tests, env)
	if err != nil {
		fmt.Fprintln(stderr, "topicvet graph:", err)
		return 1
	}
	dir, _ := os.Getwd()
	write(prog, stdout, dir)
	return 0
}

// load analyses the packages with the Graph analyzer, the way the checks
// do, and returns the program of them all.
func load(patterns []string, tests bool, env []string) (*topics.Program, error) {
	cfg := &packages.Config{Mode: packages.LoadAllSyntax, Tests: tests, Env: env}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	if n := packages.PrintErrors(pkgs); n > 0 {
		return nil, fmt.Errorf("%d errors loading the packages", n)
	}
	g, err := checker.Analyze([]*analysis.Analyzer{topicvet.Graph}, pkgs, nil)
	if err != nil {
		return nil, err
	}
	prog := &topics.Program{}
	for _, act := range g.Roots {
		if act.Err != nil {
			return nil, act.Err
		}
		if p, ok := act.Result.(*topics.Program); ok {
			prog.Add(p.Endpoints, p.Types)
		}
	}
	prog.Sort()
	return prog, nil
}
