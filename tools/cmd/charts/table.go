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
