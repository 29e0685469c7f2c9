//go:build !race

package topic

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = false
