package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/seedaa7df82c/topic/compare
cpu: Some CPU @ 2.00GHz
BenchmarkFanout/n=10/lib=topic-2   	 1342594	       256.3 ns/op	         9.965 delivered-%	       0 B/op	       0 allocs/op
BenchmarkFanout/n=10/lib=topic-2   	 1342594	       250.0 ns/op	         9.000 delivered-%	       0 B/op	       0 allocs/op
BenchmarkFanout/n=10/lib=topic-2   	 1342594	       300.0 ns/op	         8.000 delivered-%	       0 B/op	       0 allocs/op
BenchmarkFanout/n=10/lib=pubsub-2  	  232551	      1056 ns/op	       100.0 delivered-%	      16 B/op	       1 allocs/op
BenchmarkFanout/n=10/lib=pubsub-2  	  232551	      1000 ns/op	       100.0 delivered-%	      16 B/op	       1 allocs/op
--- SKIP: BenchmarkStuck/lib=pubsub
    compare_bench_test.go:72: publication blocks while a subscriber is stuck
BenchmarkPublishFanout/n=1 	1000	50 ns/op
PASS
ok  	github.com/seedaa7df82c/topic/compare	0.510s
`

func TestParseKeepsEveryRunAndTheCPU(t *testing.T) {
	rs, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if rs.cpu != "Some CPU @ 2.00GHz" {
		t.Errorf("cpu %q", rs.cpu)
	}
	if len(rs.list) != 3 {
		t.Fatalf("%d results, want 3", len(rs.list))
	}
	r := rs.find("Fanout/n=10/lib=topic")
	if r == nil || r.runs("ns/op") != 3 || r.keys["n"] != "10" || r.keys["lib"] != "topic" {
		t.Fatalf("topic result %+v", r)
	}
	if rs.find("PublishFanout/n=1") == nil {
		t.Error("a name without a -GOMAXPROCS suffix is lost")
	}
}

func TestMedianOfOddAndEvenRuns(t *testing.T) {
	rs, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, unit string
		want       float64
	}{
		{"Fanout/n=10/lib=topic", "ns/op", 256.3},
		{"Fanout/n=10/lib=topic", "delivered-%", 9},
		{"Fanout/n=10/lib=pubsub", "ns/op", 1028},
	} {
		got, ok := rs.find(tc.name).median(tc.unit)
		if !ok || got != tc.want {
			t.Errorf("%s %s: median %v %v, want %v", tc.name, tc.unit, got, ok, tc.want)
		}
	}
	if _, ok := rs.find("Fanout/n=10/lib=topic").median("MB/s"); ok {
		t.Error("median of a unit never reported")
	}
}

func TestWhereSelectsByBaseAndKeys(t *testing.T) {
	rs, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(rs.where("Fanout", "lib", "pubsub")); got != 1 {
		t.Errorf("Fanout lib=pubsub: %d results, want 1", got)
	}
	if got := len(rs.where("Fanout")); got != 2 {
		t.Errorf("Fanout: %d results, want 2 (not PublishFanout)", got)
	}
}

func TestFormatNanoseconds(t *testing.T) {
	for _, tc := range []struct {
		ns   float64
		want string
	}{{13.14, "13 ns"}, {2047, "2.0 µs"}, {14785675, "14.8 ms"}} {
		if got := formatNS(tc.ns); got != tc.want {
			t.Errorf("formatNS(%v) = %q, want %q", tc.ns, got, tc.want)
		}
	}
}
