package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A result is the runs of one benchmark: every value it reported, by unit.
type result struct {
	name   string               // without "Benchmark" and the -GOMAXPROCS suffix
	keys   map[string]string    // the key=value parts of the name
	values map[string][]float64 // by unit, one per run
}

// median returns the median of the runs' values in unit, and whether there
// was any.
func (r *result) median(unit string) (float64, bool) {
	vs := slices.Clone(r.values[unit])
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2, true
	}
	return vs[len(vs)/2], true
}

// runs returns how many runs reported unit.
func (r *result) runs(unit string) int { return len(r.values[unit]) }

// A results is the parsed output of go test -bench: its results in the order
// they first appear, and the cpu line of its header.
type results struct {
	list []*result
	cpu  string
}

// find returns the result of the benchmark named name, or nil.
func (rs *results) find(name string) *result {
	for _, r := range rs.list {
		if r.name == name {
			return r
		}
	}
	return nil
}

// where returns the results whose name starts with base and whose keys
// include every pair of kv, in order.
func (rs *results) where(base string, kv ...string) []*result {
	var out []*result
next:
	for _, r := range rs.list {
		if r.name != base && !strings.HasPrefix(r.name, base+"/") {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if r.keys[kv[i]] != kv[i+1] {
				continue next
			}
		}
		out = append(out, r)
	}
	return out
}

// procs is the -GOMAXPROCS suffix go test adds to a benchmark's name.
var procs = regexp.MustCompile(`-\d+$`)

// parse reads plain go test -bench output. Lines that are not results are
// skipped, except the cpu line of the header.
func parse(in io.Reader) (*results, error) {
	rs := new(results)
	byName := make(map[string]*result)
	sc := bufio.NewScanner(in)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if cpu, ok := strings.CutPrefix(text, "cpu: "); ok {
			rs.cpu = strings.TrimSpace(cpu)
			continue
		}
		fields := strings.Fields(text)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue // not an iteration count: a log line that starts like a name
		}
		name := procs.ReplaceAllString(strings.TrimPrefix(fields[0], "Benchmark"), "")
		r := byName[name]
		if r == nil {
			r = &result{name: name, keys: keys(name), values: make(map[string][]float64)}
			byName[name] = r
			rs.list = append(rs.list, r)
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: value %q: %v", line, fields[i], err)
			}
			r.values[fields[i+1]] = append(r.values[fields[i+1]], v)
		}
	}
	return rs, sc.Err()
}

// keys returns the key=value parts of a benchmark name.
func keys(name string) map[string]string {
	kv := make(map[string]string)
	for _, part := range strings.Split(name, "/") {
		if k, v, ok := strings.Cut(part, "="); ok {
			kv[k] = v
		}
	}
	return kv
}
