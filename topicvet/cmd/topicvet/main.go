// Command topicvet checks programs that use package topic
// (github.com/seedaa7df82c/topic), and draws their topic graph.
//
// Usage:
//
//	topicvet [flags] packages          # the checks, as a multichecker
//	go vet -vettool=$(which topicvet) packages
//	topicvet graph [-format text|dot|mermaid] [-test] packages
//
// The checks are those of package github.com/seedaa7df82c/topic/topicvet:
// topiccancel, topicoptions, unreceived, unpublished, pointervalue; each
// has a flag of its name that runs it alone (-unreceived) and is described
// by topicvet help name. topicvet graph prints, for each type published or
// received in the packages and everything they import, its publishers and
// receivers (file:line, relative to the current directory), the
// interfaces that receive it, and the From sources that turn it into
// another: as text, as Graphviz DOT, or as a Mermaid flowchart.
package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/analysis/multichecker"

	"github.com/seedaa7df82c/topic/topicvet"
)

func main() {
	if !vetProtocol(os.Args[1:]) {
		useModuleToolchain()
	}
	if len(os.Args) > 1 && os.Args[1] == "graph" {
		os.Exit(graphMain(os.Args[2:], os.Stdout, os.Stderr, nil))
	}
	multichecker.Main(topicvet.Analyzers...)
}

// vetProtocol reports whether go vet runs the tool: with a flag query or
// the name of a .cfg file.
func vetProtocol(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "-V") || strings.HasPrefix(a, "-flags") || strings.HasSuffix(a, ".cfg") {
			return true
		}
	}
	return false
}

// useModuleToolchain puts first on PATH the go command of the toolchain
// the go command selects here (a go.mod's toolchain line, GOTOOLCHAIN):
// go/packages asks the go command for its version with GO111MODULE=off,
// which selects no toolchain, and type-checks with that version: an older
// go on PATH would reject the newer language the packages use.
func useModuleToolchain() {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return
	}
	bin := filepath.Join(strings.TrimSpace(string(out)), "bin")
	os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}
