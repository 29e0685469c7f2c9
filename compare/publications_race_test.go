//go:build race

package compare_test

// reliabilityPublications is the publications of the reliability scenario.
// The race detector allows at most 8128 live goroutines, and two of the
// libraries keep one per value a stuck subscriber holds.
const reliabilityPublications = 1000
