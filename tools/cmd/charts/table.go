package main

import (
	"fmt"
	"strings"

	"github.com/seedaa7df82c/topic/tools/internal/benchread"
)

// markdown returns the medians as three Markdown tables, scenarios by
// libraries: values delivered per second to each subscriber (goodput), time
// per publication with the share delivered, and allocations per
// publication.
func markdown(rs *benchread.Set) string {
	names := libs(rs)
	var sb strings.Builder
	header := func(first string) {
		fmt.Fprintf(&sb, "| %s |", first)
		for _, n := range names {
			fmt.Fprintf(&sb, " %s |", n)
		}
		sb.WriteString("\n|---|")
		for range names {
			sb.WriteString("---:|")
		}
		sb.WriteString("\n")
	}
	cells := func(cell func(r *benchread.Result) string) {
		for _, sc := range scenarios {
			fmt.Fprintf(&sb, "| %s |", sc.label)
			for _, n := range names {
				name := sc.name + "/lib=" + n
				r := rs.Find(name)
				if r == nil {
					fmt.Fprintf(&sb, " %s |", whyMissing(rs, name))
					continue
				}
				fmt.Fprintf(&sb, " %s |", cell(r))
			}
			sb.WriteString("\n")
		}
	}

	fmt.Fprintf(&sb, "Values delivered per second to each subscriber (%s).\n\n", subtitle(rs, "delivered/s/sub"))
	header("scenario")
	cells(func(r *benchread.Result) string {
		x, ok := r.Median("delivered/s/sub")
		if !ok {
			return "-" // no subscriber: nothing is owed
		}
		return benchread.Rate(x)
	})
	fmt.Fprintf(&sb, "\nTime per publication, and share delivered (%s).\n\n", subtitle(rs, "ns/op"))
	header("scenario")
	cells(func(r *benchread.Result) string {
		ns, _ := r.Median("ns/op")
		pct, ok := r.Median("delivered-%")
		if !ok {
			return benchread.Duration(ns)
		}
		return fmt.Sprintf("%s · %s%%", benchread.Duration(ns), benchread.Number(pct))
	})
	fmt.Fprintf(&sb, "\nPublish-to-receipt latency at a fixed rate, p50 / p99 / p99.9 (%s).\n\n", subtitle(rs, "p99-ns"))
	header("scenario")
	for _, run := range latencyRuns {
		fmt.Fprintf(&sb, "| %s |", run.label)
		for _, n := range names {
			fmt.Fprintf(&sb, " %s |", latencyCell(rs.Find(run.name+"/lib="+n)))
		}
		sb.WriteString("\n")
	}
	sb.WriteString("\nAllocations per publication.\n\n")
	header("scenario")
	cells(func(r *benchread.Result) string {
		a, ok := r.Median("allocs/op")
		if !ok {
			return "?"
		}
		return fmt.Sprintf("%.0f", a)
	})
	return sb.String()
}

// The markers of the generated blocks: the tables in docs/comparison.md, the
// headline chart in the repository's README.
const (
	tablesBegin  = "<!-- compare tables: begin (make compare writes this block) -->"
	tablesEnd    = "<!-- compare tables: end -->"
	summaryBegin = "<!-- compare: begin (make compare writes this block) -->"
	summaryEnd   = "<!-- compare: end -->"
)

// tablesBlock is the block of docs/comparison.md: the stamp, the tables of
// the medians, and the reliability table rel (if any).
func tablesBlock(rs *benchread.Set, rel, command string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\n\n%s", stampLine(rs, command), markdown(rs))
	if rel != "" {
		fmt.Fprintf(&sb, "\nThe reliability scenario, from the same run:\n\n%s", rel)
	}
	return sb.String()
}

// summaryBlock is the block of the repository's README: the headline
// chart, with the stamp.
func summaryBlock(rs *benchread.Set, command string) string {
	return fmt.Sprintf("![Values delivered per second to each subscriber, against fan-out](docs/compare-goodput.png)\n\n%s\n", stampLine(rs, command))
}

// stampLine says where, when and how the run was made.
func stampLine(rs *benchread.Set, command string) string {
	cpu := rs.CPU
	if cpu == "" {
		cpu = "an unnamed CPU"
	}
	s := "Measured on " + cpu
	if stamp != "" {
		s += ", " + stamp
	}
	return s + ", by `" + command + "`."
}

// reliabilityTable returns the Markdown table in out, TestReliability's go
// test -v output, where t.Logf indents it: its lines that begin with "|".
func reliabilityTable(out string) string {
	var sb strings.Builder
	for line := range strings.Lines(out) {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "|") {
			sb.WriteString(l + "\n")
		}
	}
	return sb.String()
}

// latencyCell is r's p50 / p99 / p99.9, or "no result".
func latencyCell(r *benchread.Result) string {
	if r == nil {
		return "no result"
	}
	p50, ok1 := r.Median("p50-ns")
	p99, ok2 := r.Median("p99-ns")
	p999, ok3 := r.Median("p99.9-ns")
	if !ok1 || !ok2 || !ok3 {
		return "no result"
	}
	return benchread.Duration(p50) + " / " + benchread.Duration(p99) + " / " + benchread.Duration(p999)
}
