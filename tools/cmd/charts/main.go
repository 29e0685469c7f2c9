// Charts draws the comparison charts from plain go test -bench output.
//
// Usage:
//
//	charts -out DIR -compare compare-raw.txt -core core-sweeps.txt
//
// It reads the benchmarks of the compare module and the core's sweeps, takes
// the median of each benchmark's runs, and writes into DIR:
//
//	compare-goodput.png    values delivered per second to each subscriber versus fan-out
//	compare-goodput-total.png  values delivered per second in all versus fan-out
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
	const fanout, topics = "subscribers of the topic (fan-out)", "topics published on in turn, one subscriber each"
	write("compare-goodput.png", func(p string) error { return sweepChart(cmp, "Fanout", fanout, p, goodputPerSub) })
	write("compare-goodput-total.png", func(p string) error { return sweepChart(cmp, "Fanout", fanout, p, goodputTotal) })
	write("compare-fanout.png", func(p string) error { return sweepChart(cmp, "Fanout", fanout, p, timePerPublication) })
	write("compare-topics.png", func(p string) error { return sweepChart(cmp, "Topics", topics, p, timePerPublication) })
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
