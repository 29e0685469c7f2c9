package main

import (
	"fmt"
	"strings"
)

// markdown returns the medians as two Markdown tables, scenarios by
// libraries: time per publication with the share delivered, and allocations
// per publication.
func markdown(rs *results) string {
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
	cells := func(cell func(r *result) string) {
		for _, sc := range scenarios {
			fmt.Fprintf(&sb, "| %s |", sc.label)
			for _, n := range names {
				r := rs.find(sc.name + "/lib=" + n)
				if r == nil {
					fmt.Fprintf(&sb, " %s |", whyMissing(n))
					continue
				}
				fmt.Fprintf(&sb, " %s |", cell(r))
			}
			sb.WriteString("\n")
		}
	}

	fmt.Fprintf(&sb, "Time per publication, and share delivered (%s).\n\n", subtitle(rs, "ns/op"))
	header("scenario")
	cells(func(r *result) string {
		ns, _ := r.median("ns/op")
		pct, ok := r.median("delivered-%")
		if !ok {
			return formatNS(ns)
		}
		return fmt.Sprintf("%s · %s%%", formatNS(ns), formatPct(pct))
	})
	sb.WriteString("\nAllocations per publication.\n\n")
	header("scenario")
	cells(func(r *result) string {
		a, ok := r.median("allocs/op")
		if !ok {
			return "?"
		}
		return fmt.Sprintf("%.0f", a)
	})
	return sb.String()
}

// formatNS formats a duration in nanoseconds with three significant figures
// at most.
func formatNS(ns float64) string {
	switch {
	case ns < 1e3:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	default:
		return fmt.Sprintf("%.2f s", ns/1e9)
	}
}

// formatPct formats a percentage: whole above 10, one decimal below.
func formatPct(p float64) string {
	if p >= 10 {
		return fmt.Sprintf("%.0f", p)
	}
	return fmt.Sprintf("%.1f", p)
}
