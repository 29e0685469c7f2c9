package benchread

import (
	"fmt"
	"math"
	"strings"
)

// round3 returns x rounded to three significant digits, half away from zero.
func round3(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

// Number formats x with three significant digits, rounded half away from
// zero, without an exponent: 7.41, 48.9, 259, 3010, 0.0500.
func Number(x float64) string {
	r := round3(x)
	if r == 0 || math.IsInf(r, 0) || math.IsNaN(r) {
		return fmt.Sprint(r)
	}
	decimals := max(0, 2-int(math.Floor(math.Log10(math.Abs(r)))))
	return fmt.Sprintf("%.*f", decimals, r)
}

// timeUnits are the units of Duration, each 1000 times the one before.
var timeUnits = []string{"ns", "µs", "ms", "s"}

// Duration formats a time in nanoseconds as [Number] does, in the largest of
// ns, µs, ms and s in which it is at least 1 once rounded: 7.41 ns, 1.17 µs,
// 48.9 µs, and 999.5 ns is 1.00 µs.
func Duration(ns float64) string {
	x := ns
	i := 0
	for ; i < len(timeUnits)-1 && math.Abs(round3(x)) >= 1000; i++ {
		x /= 1000
	}
	return Number(x) + " " + timeUnits[i]
}

// rateUnits are the prefixes of Rate, each 1000 times the one before.
var rateUnits = []string{"", "k", "M", "G"}

// Rate formats a rate per second as [Number] does, with the largest of no
// prefix, k, M and G in which it is at least 1 once rounded: 954/s,
// 25.2 M/s, and 999.5 is 1.00 k/s.
func Rate(x float64) string {
	i := 0
	for ; i < len(rateUnits)-1 && math.Abs(round3(x)) >= 1000; i++ {
		x /= 1000
	}
	if i == 0 {
		return Number(x) + "/s"
	}
	return Number(x) + " " + rateUnits[i] + "/s"
}

// Format formats a value in unit, as go test writes it: a unit of
// nanoseconds per something as a [Duration] ("ns/op" as "48.9 µs", "ns/value"
// as "1.17 µs/value"), any other as a [Number] followed by the unit ("259
// B/sub").
func Format(x float64, unit string) string {
	if unit == "ns/op" {
		return Duration(x)
	}

	if per, ok := strings.CutPrefix(unit, "ns/"); ok {
		return Duration(x) + "/" + per
	}
	return Number(x) + " " + unit
}
