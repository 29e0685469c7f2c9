// Charts draws the comparison charts from plain go test -bench output.
//
// Usage:
//
//	charts -out DIR -compare compare-raw.txt -core core-sweeps.txt
//
// It reads the benchmarks of the compare module and the core's sweeps, takes
// the median of each benchmark's runs, and writes into DIR:
//
//	compare-fanout.png     ns per publication versus fan-out, per library
//	compare-topics.png     ns per publication versus number of topics
//	compare-delivered.png  share of values delivered, per scenario and library
//	core-sweeps.png        this library's own sweeps
//	compare-table.md       the medians as Markdown tables
//
// compare/run runs it from tools/. The libraries are drawn in the order their
// benchmarks first appear; a missing result is labelled "blocks" when its
// benchmark was skipped because publication blocks, as BenchmarkStuck logs.
// Times and shares are formatted by benchread's one rule: three significant
// digits, 48.9 µs.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/seedaa7df82c/topic/tools/internal/benchread"
)

func main() {
	out := flag.String("out", ".", "directory to write the charts into")
	cmpPath := flag.String("compare", "", "go test -bench output of the compare module")
	corePath := flag.String("core", "", "go test -bench output of the core's sweeps (optional)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("charts: ")
	if *cmpPath == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}

	cmp, err := benchread.ReadFiles(*cmpPath)
	if err != nil {
		log.Fatal(err)
	}
	write := func(name string, draw func(string) error) {
		path := filepath.Join(*out, name)
		if err := draw(path); err != nil {
			log.Fatalf("%s: %v", name, err)
		}
		fmt.Println("wrote", path)
	}
	write("compare-fanout.png", func(p string) error { return sweepChart(cmp, "Fanout", "subscribers of the topic (fan-out)", p) })
	write("compare-topics.png", func(p string) error {
		return sweepChart(cmp, "Topics", "topics published on in turn, one subscriber each", p)
	})
	write("compare-delivered.png", func(p string) error { return deliveredChart(cmp, p) })
	write("compare-table.md", func(p string) error { return os.WriteFile(p, []byte(markdown(cmp)), 0o644) })
	if *corePath != "" {
		core, err := benchread.ReadFiles(*corePath)
		if err != nil {
			log.Fatal(err)
		}
		write("core-sweeps.png", func(p string) error { return coreChart(core, p) })
	}
}
