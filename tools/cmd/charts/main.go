// Charts draws the comparison charts from plain go test -bench output.
//
// Usage:
//
//	charts -out DIR -compare compare-raw.txt [-core core-sweeps.txt]
//	       [-stamp TEXT] [-reliability reliability.txt -readme FILE -summary FILE -command TEXT]
//
// It reads the benchmarks of the compare module and the core's sweeps, takes
// the median of each benchmark's runs, and writes into DIR:
//
//	compare-goodput.png        values delivered per second to each subscriber versus fan-out
//	compare-goodput-total.png  values delivered per second in all versus fan-out
//	compare-fanout.png         ns per publication versus fan-out, per library
//	compare-topics.png         ns per publication versus number of topics
//	compare-delivered.png      share of values delivered, per scenario and library
//	compare-latency.png        publish-to-receipt latency at a fixed rate: p50, p99, p99.9
//	core-sweeps.png            this library's own sweeps, with the spread of the runs
//	compare-table.md           the medians as Markdown tables
//
// Every chart and table says where the run was made: the CPU the benchmarks
// report, and -stamp (the Go version, GOMAXPROCS, the commit and the date).
// With -readme, the tables, the reliability table that -reliability's
// TestReliability output holds, and the stamp replace the block of FILE
// between its compare markers; with -summary, the headline chart and the
// stamp replace that of the repository's README.
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
	"github.com/seedaa7df82c/topic/tools/internal/docblock"
)

func main() {
	out := flag.String("out", ".", "directory to write the charts into")
	cmpPath := flag.String("compare", "", "go test -bench output of the compare module")
	corePath := flag.String("core", "", "go test -bench output of the core's sweeps (optional)")
	flag.StringVar(&stamp, "stamp", "", "where and when the run was made, for every chart and table: Go version, GOMAXPROCS, commit, date")
	relPath := flag.String("reliability", "", "go test -v output of TestReliability, for -readme")
	readme := flag.String("readme", "", "a file whose compare tables block gets the tables")
	summary := flag.String("summary", "", "a file whose compare block gets the headline chart")
	command := flag.String("command", "make compare", "the command that made the run, for -readme and -summary")
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
	write("compare-latency.png", func(p string) error { return latencyChart(cmp, p) })
	write("compare-table.md", func(p string) error { return os.WriteFile(p, []byte(markdown(cmp)), 0o644) })
	if *readme != "" {
		rel := ""
		if *relPath != "" {
			out, err := os.ReadFile(*relPath)
			if err != nil {
				log.Fatal(err)
			}
			rel = reliabilityTable(string(out))
		}
		if err := docblock.Replace(*readme, tablesBegin, tablesEnd, []byte(tablesBlock(cmp, rel, *command))); err != nil {
			log.Fatal(err)
		}
		fmt.Println("wrote the tables into", *readme)
	}
	if *summary != "" {
		if err := docblock.Replace(*summary, summaryBegin, summaryEnd, []byte(summaryBlock(cmp, *command))); err != nil {
			log.Fatal(err)
		}
		fmt.Println("wrote the summary into", *summary)
	}
	if *corePath != "" {
		core, err := benchread.ReadFiles(*corePath)
		if err != nil {
			log.Fatal(err)
		}
		write("core-sweeps.png", func(p string) error { return coreChart(core, p) })
	}
}
