package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedaa7df82c/topic/tools/internal/benchread"
)

// rounds is two rounds of a few benchmarks, as make table writes them.
const rounds = `goos: linux
goarch: amd64
cpu: Test CPU
BenchmarkRawSend-2            	1000	        40.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkPublishDirect-2      	1000	        50.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkRawSend-2            	1000	        20.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkPublishDirect-2      	1000	        30.0 ns/op	       0 B/op	       0 allocs/op
`

func readRounds(t *testing.T) *benchread.Set {
	t.Helper()
	res := new(benchread.Set)
	if _, err := res.Read(strings.NewReader(rounds), "rounds"); err != nil {
		t.Fatal(err)
	}
	return res
}

var testStamp = stamp{goVersion: "go1.27.3 linux/amd64", commit: "abc1234", date: "2026-12-06", cores: 2, command: "make benchdoc COUNT=2"}

// The document is stamped, has a section per table with what it
// measures, and reads the figures of the run: medians, and the median of
// the per-round ratios (50/40 and 30/20: 1.25 and 1.5, so 1.38).
func TestTheDocumentIsStampedAndReadsTheRun(t *testing.T) {
	var b bytes.Buffer
	writeDoc(&b, readRounds(t), testStamp)
	doc := b.String()
	for _, want := range []string{
		"Measured on Test CPU (2 cores), go1.27.3 linux/amd64, at commit abc1234 on 2026-12-06, by `make benchdoc COUNT=2`.",
		"do not edit by hand",
		"## Core paths\n\n" + notes["Core paths"],
		"| direct delivery, identical type | 40.0 ns | 1.38× raw send | 0 |",
		"| no subscriber | not measured | | |",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the document lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "####") {
		t.Errorf("the document keeps the tables' own headings:\n%s", doc)
	}
}

// The README's summary replaces what was between its markers, and only
// that; a README without the markers is an error, left as it was.
func TestTheSummaryReplacesOnlyItsBlock(t *testing.T) {
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	old := "# x\n\nbefore\n" + summaryBegin + "\nstale table\n" + summaryEnd + "\nafter\n"
	if err := os.WriteFile(readme, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	writeSummary(&b, readRounds(t), testStamp)
	if err := replaceBlock(readme, b.Bytes()); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(readme)
	want := "# x\n\nbefore\n" + summaryBegin + "\n" + b.String() + summaryEnd + "\nafter\n"
	if string(got) != want {
		t.Errorf("README after:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(b.String(), "| direct delivery, identical type | 40.0 ns | 1.38× raw send | 0 |") {
		t.Errorf("the summary lacks the direct delivery row:\n%s", b.String())
	}

	bare := filepath.Join(dir, "bare.md")
	if err := os.WriteFile(bare, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replaceBlock(bare, b.Bytes()); err == nil {
		t.Error("a README without the markers was rewritten without an error")
	}
	if got, _ := os.ReadFile(bare); string(got) != "no markers\n" {
		t.Errorf("a README without the markers became %q", got)
	}
}

// latencyRounds is two rounds of a latency run of two modes, and the
// machine's stalls.
const latencyRounds = `goos: linux
goarch: amd64
cpu: Test CPU
BenchmarkRawSend-2                                 	1000	        40.0 ns/op
BenchmarkLatency/rate=10k/n=1-2       	1000	    100000 ns/op	       200 channel-p50-ns	      5000 channel-p99-ns	     20000 channel-p99.9-ns	       300 handler-p50-ns	      5000 handler-p99-ns	     30000 handler-p99.9-ns	       100 rate-%
BenchmarkMachineStalls-2                           	1000	     10000 ns/op	   4000000 max-stall-ns	        20 stalls/s	       1.5 stalled-%
BenchmarkRawSend-2                                 	1000	        20.0 ns/op
BenchmarkLatency/rate=10k/n=1-2       	1000	    100000 ns/op	       200 channel-p50-ns	      7000 channel-p99-ns	     30000 channel-p99.9-ns	       500 handler-p50-ns	     21000 handler-p99-ns	     40000 handler-p99.9-ns	       100 rate-%
BenchmarkMachineStalls-2                           	1000	     10000 ns/op	   6000000 max-stall-ns	        30 stalls/s	       2.5 stalled-%
`

// The latency section has a row for each mode of a run, the medians of the
// rounds, its p99 read against the channel's of the same run (1 and 3:
// 2×), and ends with what the machine itself stalled in the same rounds,
// to read its tails by.
func TestTheLatencySectionSaysWhatTheMachineStalled(t *testing.T) {
	res := new(benchread.Set)
	if _, err := res.Read(strings.NewReader(latencyRounds), "rounds"); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	write(&b, res, "####", nil)
	out := b.String()
	for _, want := range []string{
		"| 10,000/s | 1 | a buffered channel per consumer (**baseline**) | 200 ns | 6.00 µs | 25.0 µs |  |",
		"| 10,000/s | 1 | a handler (`Handle`) | 400 ns | 13.0 µs | 35.0 µs | 2.00× channel |",
		"for more than 100 µs 25.0 times a second, 2.00 % of the time, the longest stall 5.00 ms.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	write(&b, readRounds(t), "####", nil)
	if strings.Contains(b.String(), "MachineStalls") {
		t.Error("a run without the stalls benchmark mentions it")
	}
}

// losslessRounds is two rounds of BenchmarkLossless at n=1 in two of its
// modes, with the CPU time per value a unix run reports.
const losslessRounds = `cpu: Test CPU
BenchmarkLossless/mode=channel/n=1-2          	1000	       100.0 ns/op	       100.0 cpu-ns/value	       100.0 ns/value	  10000000 values/s	       0 B/op	       0 allocs/op
BenchmarkLossless/mode=channel-follower/n=1-2 	1000	       150.0 ns/op	       300.0 cpu-ns/value	       150.0 ns/value	   6666666 values/s	       0 B/op	       0 allocs/op
BenchmarkLossless/mode=channel/n=1-2          	1000	       100.0 ns/op	       200.0 cpu-ns/value	       100.0 ns/value	  10000000 values/s	       0 B/op	       0 allocs/op
BenchmarkLossless/mode=channel-follower/n=1-2 	1000	       150.0 ns/op	       500.0 cpu-ns/value	       150.0 ns/value	   6666666 values/s	       0 B/op	       0 allocs/op
`

// A run that reports the lossless modes' CPU time per value gets a table
// of it after their time per value, each ratio the median of the rounds'
// (3 and 2.5: 2.75); a run without it, on a system that does not tell it,
// gets no such table.
func TestTheLosslessCPUTableIsWrittenWhenTheRunHasIt(t *testing.T) {
	res := new(benchread.Set)
	if _, err := res.Read(strings.NewReader(losslessRounds), "rounds"); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	writeDoc(&b, res, testStamp)
	doc := b.String()
	row := "| 1 consumer, a channel follower per consumer (`Subscribe` with `Follow`) |"
	time, cpu := strings.Index(doc, "## "+losslessTitle+"\n"), strings.Index(doc, "## "+losslessCPUTitle+"\n\n"+notes[losslessCPUTitle])
	if time < 0 || cpu < time {
		t.Fatalf("the document lacks the CPU table after the time table:\n%s", doc)
	}
	for _, want := range []string{row + " 150 ns | 1.50× channel | 0 |", row + " 400 ns | 2.75× channel | 0 |"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the document lacks %q:\n%s", want, doc)
		}
	}
	if strings.Index(doc, row+" 400 ns") < cpu {
		t.Errorf("the CPU figure is not in the CPU table:\n%s", doc)
	}
	b.Reset()
	writeDoc(&b, readRounds(t), testStamp)
	if strings.Contains(b.String(), losslessCPUTitle) {
		t.Errorf("a run without the CPU time has its table:\n%s", b.String())
	}
}
