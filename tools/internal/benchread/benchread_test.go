package benchread

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sample is real go test -bench -benchmem output (the root package's and the
// compare module's), with a skipped benchmark, a log line that starts like a
// result and a name that go test -v prints alone.
const sample = `goos: linux
goarch: amd64
pkg: github.com/seedaa7df82c/topic
cpu: AMD EPYC
BenchmarkRawSend-2              	16672840	        67.78 ns/op	       0 B/op	       0 allocs/op
BenchmarkRawSend-2              	37159518	        76.52 ns/op	       0 B/op	       0 allocs/op
BenchmarkRawSend-2              	17405190	        57.96 ns/op	       0 B/op	       0 allocs/op
BenchmarkHandlerMemory-2        	       3	 389622467 ns/op	      7645 B/handler	      3542 heap-B/handler	      4103 stack-B/handler	47110330 B/op	  213499 allocs/op
BenchmarkHandlerMemory-2        	       4	 291210432 ns/op	      7587 B/handler	      3543 heap-B/handler	      4044 stack-B/handler	45397048 B/op	  210095 allocs/op
BenchmarkFollowerRead/batch=64-2         	 1000000	      1606 ns/op	        25.48 ns/value	       0 B/op	       0 allocs/op
BenchmarkFollowerRead/batch=64-2         	 1000000	      2721 ns/op	        43.18 ns/value	       0 B/op	       0 allocs/op
BenchmarkFollowerRead/batch=64-2         	  995469	      2413 ns/op	        38.29 ns/value	       0 B/op	       0 allocs/op
BenchmarkFollowerRead/batch=64-2         	  995469	      2413 ns/op	        38.29 ns/value	       0 B/op	       0 allocs/op
PASS
ok  	github.com/seedaa7df82c/topic	31.274s
pkg: github.com/seedaa7df82c/topic/compare
cpu: Some CPU @ 2.00GHz
BenchmarkFanout/n=10/lib=topic
BenchmarkFanout/n=10/lib=topic-2   	 1342594	       256.3 ns/op	         9.965 delivered-%	       0 B/op	       0 allocs/op
BenchmarkFanout/n=10/lib=pubsub-2  	  232551	      1056 ns/op	       100.0 delivered-%	      16 B/op	       1 allocs/op
BenchmarkFanout/n=10/lib=pubsub-2  	  232551	      1000 ns/op	       100.0 delivered-%	      16 B/op	       1 allocs/op
BenchmarkFanout is slow on this machine
--- SKIP: BenchmarkStuck/lib=pubsub
    compare_bench_test.go:72: publication blocks while a subscriber is stuck
--- SKIP: BenchmarkStuck/lib=eventbus-async-2
BenchmarkPublishFanout/n=1 	1000	50 ns/op
PASS
`

func read(t *testing.T) *Set {
	t.Helper()
	s := new(Set)
	n, err := s.Read(strings.NewReader(sample), "sample")
	if err != nil {
		t.Fatal(err)
	}
	if n != 13 {
		t.Errorf("read %d results, want 13", n)
	}
	return s
}

func TestReadKeepsEveryRunByUnitAsWritten(t *testing.T) {
	s := read(t)
	var names []string
	for _, r := range s.List {
		names = append(names, r.Name)
	}
	want := "RawSend HandlerMemory FollowerRead/batch=64 Fanout/n=10/lib=topic Fanout/n=10/lib=pubsub PublishFanout/n=1"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("names %q, want %q", got, want)
	}
	if s.CPU != "Some CPU @ 2.00GHz" {
		t.Errorf("cpu %q", s.CPU)
	}
	for _, tc := range []struct {
		name, unit string
		runs       int
		first      float64
	}{
		{"RawSend", "ns/op", 3, 67.78},
		{"RawSend", "allocs/op", 3, 0},
		{"HandlerMemory", "B/op", 2, 47110330},
		{"HandlerMemory", "heap-B/handler", 2, 3542},
		{"FollowerRead/batch=64", "ns/value", 4, 25.48},
		{"Fanout/n=10/lib=topic", "delivered-%", 1, 9.965},
		{"PublishFanout/n=1", "ns/op", 1, 50},
	} {
		r := s.Find(tc.name)
		if r == nil {
			t.Errorf("%s: no result", tc.name)
			continue
		}
		if r.Runs(tc.unit) != tc.runs || r.Values[tc.unit][0] != tc.first {
			t.Errorf("%s %s: %v, want %d runs from %v", tc.name, tc.unit, r.Values[tc.unit], tc.runs, tc.first)
		}
	}
	if r := s.Find("Fanout/n=10/lib=pubsub"); r.Keys["n"] != "10" || r.Keys["lib"] != "pubsub" || len(r.Keys) != 2 {
		t.Errorf("keys %v", r.Keys)
	}
	if len(s.Find("RawSend").Values["sec/op"]) != 0 {
		t.Error("a unit tidied by benchfmt")
	}
}

func TestReadRecordsSkipsWithTheirReason(t *testing.T) {
	s := read(t)
	if len(s.Skipped) != 2 {
		t.Errorf("skipped %v", s.Skipped)
	}
	if why, ok := s.Skipped["Stuck/lib=pubsub"]; !ok || why != "publication blocks while a subscriber is stuck" {
		t.Errorf("Stuck/lib=pubsub skipped %v with %q", ok, why)
	}
	if why, ok := s.Skipped["Stuck/lib=eventbus-async"]; !ok || why != "" {
		t.Errorf("Stuck/lib=eventbus-async skipped %v with %q", ok, why)
	}
}

func TestMedianOfOddAndEvenCounts(t *testing.T) {
	s := read(t)
	for _, tc := range []struct {
		name, unit string
		want       float64
	}{
		{"RawSend", "ns/op", 67.78},                     // 3 runs
		{"HandlerMemory", "B/handler", 7616},            // 2 runs
		{"FollowerRead/batch=64", "ns/value", 38.29},    // 4 runs: (38.29+38.29)/2
		{"FollowerRead/batch=64", "ns/op", 2413},        // 4 runs
		{"Fanout/n=10/lib=pubsub", "ns/op", 1028},       // 2 runs
		{"Fanout/n=10/lib=topic", "delivered-%", 9.965}, // 1 run
	} {
		got, ok := s.Find(tc.name).Median(tc.unit)
		if !ok || got != tc.want {
			t.Errorf("%s %s: median %v %v, want %v", tc.name, tc.unit, got, ok, tc.want)
		}
	}
	if _, ok := s.Find("RawSend").Median("MB/s"); ok {
		t.Error("median of a unit never reported")
	}
	if m, ok := Median([]float64{4, 1, 3, 2}); !ok || m != 2.5 {
		t.Errorf("Median(4 1 3 2) = %v %v, want 2.5", m, ok)
	}
}

func TestWhereSelectsByBaseAndKeys(t *testing.T) {
	s := read(t)
	if got := len(s.Where("Fanout", "lib", "pubsub")); got != 1 {
		t.Errorf("Fanout lib=pubsub: %d results, want 1", got)
	}
	if got := len(s.Where("Fanout")); got != 2 {
		t.Errorf("Fanout: %d results, want 2 (not PublishFanout)", got)
	}
}

func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	a, b, empty := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt"), filepath.Join(dir, "empty.txt")
	for path, text := range map[string]string{
		a:     "BenchmarkX-2 10 5 ns/op\n",
		b:     "BenchmarkX-4 10 7 ns/op\nBenchmarkY 10 1 ns/op\n",
		empty: "PASS\n",
	} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := ReadFiles(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := s.Find("X").Median("ns/op"); len(s.List) != 2 || m != 6 {
		t.Errorf("%d results, X median %v; want 2, 6", len(s.List), m)
	}
	if _, err := ReadFiles(a, empty); err == nil || !strings.Contains(err.Error(), "empty.txt: no benchmark results") {
		t.Errorf("a file without results: %v", err)
	}
}

func TestFormatRoundsToThreeSignificantDigits(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		unit string
		want string
	}{
		{7.414, "ns/op", "7.41 ns"},
		{13.14, "ns/op", "13.1 ns"},
		{99.95, "ns/op", "100 ns"},
		{0.5, "ns/op", "0.500 ns"},
		{0, "ns/op", "0 ns"},
		{999.4, "ns/op", "999 ns"},
		{999.5, "ns/op", "1.00 µs"},
		{1000, "ns/op", "1.00 µs"},
		{1166, "ns/op", "1.17 µs"},
		{2047, "ns/op", "2.05 µs"},
		{48870, "ns/op", "48.9 µs"},
		{999_500, "ns/op", "1.00 ms"},
		{14785675, "ns/op", "14.8 ms"},
		{999_500_000, "ns/op", "1.00 s"},
		{1234.5e9, "ns/op", "1230 s"},
		{38.29, "ns/value", "38.3 ns/value"},
		{1606, "ns/follower", "1.61 µs/follower"},
		{290.7, "B/sub", "291 B/sub"},
		{7645, "B/handler", "7650 B/handler"},
		{9.965, "delivered-%", "9.97 delivered-%"},
		{0.05, "x", "0.0500 x"},
	} {
		if got := Format(tc.x, tc.unit); got != tc.want {
			t.Errorf("Format(%v, %q) = %q, want %q", tc.x, tc.unit, got, tc.want)
		}
	}
	if got := Duration(48870); got != "48.9 µs" {
		t.Errorf("Duration(48870) = %q", got)
	}
	if got := Number(99.96); got != "100" {
		t.Errorf("Number(99.96) = %q", got)
	}
}

func TestRateTakesThePrefixOfItsRoundedValue(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{
		{0, "0/s"},
		{954.4, "954/s"},
		{999.5, "1.00 k/s"},
		{25_201_681, "25.2 M/s"},
		{166_483_168, "166 M/s"},
		{1.5e9, "1.50 G/s"},
		{2.5e12, "2500 G/s"},
	} {
		if got := Rate(tc.x); got != tc.want {
			t.Errorf("Rate(%v) = %q, want %q", tc.x, got, tc.want)
		}
	}
}
