// Package benchread reads the output of go test -bench for the commands of
// this module, through golang.org/x/perf/benchfmt, and formats its figures.
//
// Every figure is formatted by one rule, [Number]'s: three significant
// digits, rounded half away from zero. A time ([Duration]) is written in the
// largest of ns, µs, ms and s in which it is at least 1 once rounded: 7.41 ns,
// 48.9 µs, 999.5 ns is 1.00 µs.
package benchread

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// A Result is the runs of one benchmark: every value it reported, by unit.
type Result struct {
	// Name is the benchmark's name without "Benchmark" and the -GOMAXPROCS
	// suffix, e.g. "Fanout/n=10/lib=topic".
	Name string
	// Keys are the key=value parts of Name.
	Keys map[string]string
	// Values are the values of each unit as the input wrote it ("ns/op",
	// "B/op", "allocs/op", or a custom metric such as "ns/value"), one per
	// run, in the order of the input.
	Values map[string][]float64
}

// Median returns the median of the runs' values in unit, and whether there
// was any.
func (r *Result) Median(unit string) (float64, bool) { return Median(r.Values[unit]) }

// Runs returns how many runs reported unit.
func (r *Result) Runs(unit string) int { return len(r.Values[unit]) }

// Median returns the median of xs (the mean of the middle two when their
// number is even), and whether xs has any value.
func Median(xs []float64) (float64, bool) {
	n := len(xs)
	if n == 0 {
		return 0, false
	}
	s := slices.Sorted(slices.Values(xs))
	if n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2, true
	}
	return s[n/2], true
}

// A Set is the results of one or more inputs.
type Set struct {
	// List holds the results in the order their benchmarks first appear.
	List []*Result
	// CPU is the last cpu line of the inputs' headers, or "".
	CPU string
	// Skipped maps the name of each benchmark reported skipped ("--- SKIP:
	// BenchmarkStuck/lib=pubsub"), as a Result names it, to the first line
	// it logged, without the file:line prefix.
	Skipped map[string]string

	byName map[string]*Result
}

// Find returns the result of the benchmark named name, or nil.
func (s *Set) Find(name string) *Result { return s.byName[name] }

// Where returns the results whose name is base or starts with base+"/", and
// whose keys include every pair of kv, in order of appearance.
func (s *Set) Where(base string, kv ...string) []*Result {
	var out []*Result
next:
	for _, r := range s.List {
		if r.Name != base && !strings.HasPrefix(r.Name, base+"/") {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if r.Keys[kv[i]] != kv[i+1] {
				continue next
			}
		}
		out = append(out, r)
	}
	return out
}

// ReadFiles reads the named files, in order, into a new Set. A file without
// any result is an error.
func ReadFiles(paths ...string) (*Set, error) {
	s := new(Set)
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		n, err := s.Read(f, path)
		f.Close()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("%s: no benchmark results", path)
		}
	}
	return s, nil
}

// Read adds the results of in, plain go test -bench output, to s, and
// returns how many result lines it read; name names in in errors. Lines that
// are neither results nor configuration ("key: value") are skipped, and so
// are lines that start like a result but are not one, such as a log line
// that begins with a benchmark's name.
func (s *Set) Read(in io.Reader, name string) (int, error) {
	data, err := io.ReadAll(in)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	s.readSkips(data)
	n := 0
	br := benchfmt.NewReader(bytes.NewReader(data), name)
	for br.Scan() {
		res, ok := br.Result().(*benchfmt.Result)
		if !ok {
			continue // a *benchfmt.SyntaxError, or unit metadata
		}
		n++
		if cpu := res.GetConfig("cpu"); cpu != "" {
			s.CPU = cpu
		}
		r := s.result(res.Name)
		for _, v := range res.Values {
			unit, x := v.Unit, v.Value
			if v.OrigUnit != "" { // benchfmt tidies ns/op into sec/op
				unit, x = v.OrigUnit, v.OrigValue
			}
			r.Values[unit] = append(r.Values[unit], x)
		}
	}
	return n, br.Err()
}

// result returns the Result of the benchmark whose full name, as benchfmt
// reads it, is full, creating it if needed.
func (s *Set) result(full benchfmt.Name) *Result {
	name, keys := split(full)
	r := s.byName[name]
	if r == nil {
		if s.byName == nil {
			s.byName = make(map[string]*Result)
		}
		r = &Result{Name: name, Keys: keys, Values: make(map[string][]float64)}
		s.byName[name] = r
		s.List = append(s.List, r)
	}
	return r
}

// split returns a benchmark's name without "Benchmark" (benchfmt removes it)
// and the -GOMAXPROCS suffix, and its key=value parts.
func split(full benchfmt.Name) (string, map[string]string) {
	base, parts := full.Parts()
	var sb strings.Builder
	sb.Write(base)
	keys := make(map[string]string)
	for _, p := range parts {
		if p[0] == '-' {
			continue // GOMAXPROCS, always last
		}
		sb.Write(p)
		if k, v, ok := strings.Cut(string(p[1:]), "="); ok {
			keys[k] = v
		}
	}
	return sb.String(), keys
}

// logPrefix is the file:line prefix of a line a test logs.
var logPrefix = regexp.MustCompile(`^\s+\S+\.go:\d+: `)

// readSkips records in s.Skipped the benchmarks data reports skipped, with
// the first line each logged. benchfmt reads results only.
func (s *Set) readSkips(data []byte) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	skipped := ""
	for sc.Scan() {
		line := sc.Text()
		if skipped != "" {
			if m := logPrefix.FindString(line); m != "" {
				s.Skipped[skipped] = strings.TrimSpace(line[len(m):])
			}
			skipped = ""
		}
		full, ok := strings.CutPrefix(line, "--- SKIP: Benchmark")
		if !ok {
			continue
		}
		if s.Skipped == nil {
			s.Skipped = make(map[string]string)
		}
		skipped, _ = split(benchfmt.Name(strings.TrimSpace(full)))
		s.Skipped[skipped] = ""
	}
}
