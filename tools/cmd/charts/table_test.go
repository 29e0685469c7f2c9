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
BenchmarkStuck/lib=topic-2          	 1000	  48870 ns/op	 9.965 delivered-%	 2039 delivered/s	 2039 delivered/s/sub	 0 B/op	 0 allocs/op
--- SKIP: BenchmarkStuck/lib=pubsub
    compare_bench_test.go:72: publication blocks while a subscriber is stuck
--- SKIP: BenchmarkStuck/lib=watermill
    compare_bench_test.go:75: keeps a goroutine per value held: 20000 publications is over 10000; use -benchtime=10000x
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
		"| no subscriber | - | - | - |",
		"| stuck beside healthy | 0 | blocks | skipped |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
}
