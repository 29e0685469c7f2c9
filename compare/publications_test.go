//go:build !race

package compare_test

// reliabilityPublications is the publications of the reliability scenario.
const reliabilityPublications = 10000
