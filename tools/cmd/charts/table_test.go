package main

import (
	"strings"
	"testing"

	"github.com/seedaa7df82c/topic/tools/internal/benchread"
)

const sample = `cpu: Some CPU @ 2.00GHz
BenchmarkNoSubscriber/lib=topic-2   	 1000	  5.123 ns/op	 100.0 delivered-%	 0 B/op	 0 allocs/op
BenchmarkNoSubscriber/lib=pubsub-2  	 1000	  309.4 ns/op	 100.0 delivered-%	 16 B/op	 1 allocs/op
BenchmarkNoSubscriber/lib=watermill-2	 1000	  2996 ns/op	 99.96 delivered-%	 16 B/op	 1 allocs/op
BenchmarkLatency/rate=10k/n=1/lib=topic-2	 1000	  100000 ns/op	 180.0 p50-ns	 2100 p99-ns	 45000 p99.9-ns	 100.0 rate-%	 100.0 delivered-%
BenchmarkStuck/lib=topic-2          	 1000	  48870 ns/op	 9.965 delivered-%	 2039 delivered/s	 2039 delivered/s/sub	 0 B/op	 0 allocs/op
--- SKIP: BenchmarkStuck/lib=pubsub
    compare_bench_test.go:72: publication blocks while a subscriber is stuck
--- SKIP: BenchmarkStuck/lib=watermill
    compare_bench_test.go:75: keeps every value held: 20000 publications is over 10000; use -benchtime=10000x
`

func TestMarkdownNamesLibrariesInOrderAndMissingResults(t *testing.T) {
	rs := new(benchread.Set)
	if _, err := rs.Read(strings.NewReader(sample), "sample"); err != nil {
		t.Fatal(err)
	}
	md := markdown(rs)
	for _, want := range []string{
		"(median of 1 runs, Some CPU @ 2.00GHz)",
		"| scenario | topic | pubsub | watermill |",
		"| no subscriber | 5.12 ns · 100% | 309 ns · 100% | 3.00 µs · 100% |",
		"| 1 subscriber | no result | no result | no result |",
		"| stuck beside healthy | 48.9 µs · 9.97% | blocks | skipped |",
		"| stuck beside healthy | 2.04 k/s | blocks | skipped |",
		"| 1 subscriber, 10k/s | 180 ns / 2.10 µs / 45.0 µs | no result | no result |",
		"| no subscriber | - | - | - |",
		"| stuck beside healthy | 0 | blocks | skipped |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
}

func TestReliabilityTableIsTheTableOfTheLog(t *testing.T) {
	out := `=== RUN   TestReliability
    reliability_test.go:88: a counting and a stuck subscriber, 10000 publications, capacity 64
        | lib | publish |
        |---|---|
        | topic | finished |
--- PASS: TestReliability (0.12s)
`
	if got, want := reliabilityTable(out), "| lib | publish |\n|---|---|\n| topic | finished |\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestBlocksCarryTheStamp(t *testing.T) {
	rs := new(benchread.Set)
	if _, err := rs.Read(strings.NewReader(sample), "sample"); err != nil {
		t.Fatal(err)
	}
	stamp = "go1.27.3 linux/amd64, GOMAXPROCS 2, commit abc1234, 2026-12-06"
	defer func() { stamp = "" }()
	want := "Measured on Some CPU @ 2.00GHz, go1.27.3 linux/amd64, GOMAXPROCS 2, commit abc1234, 2026-12-06, by `make compare`."
	if b := tablesBlock(rs, "| rel |\n", "make compare"); !strings.HasPrefix(b, want) || !strings.HasSuffix(b, "| rel |\n") {
		t.Errorf("tables block:\n%s", b)
	}
	if b := summaryBlock(rs, "make compare"); !strings.Contains(b, want) || !strings.Contains(b, "docs/compare-goodput.png") {
		t.Errorf("summary block:\n%s", b)
	}
	if s := subtitle(rs, "ns/op"); !strings.HasSuffix(s, stamp) {
		t.Errorf("subtitle %q has no stamp", s)
	}
}
