//go:build amd64 && !race

package topic

// decrement stores one less at p, after every memory operation before it: a
// release store. amd64 keeps a store after earlier loads and stores (TSO), so
// a plain store is one, and costs no locked instruction as an atomic store or
// addition would. p must have no other writer meanwhile (a pinned section's
// counter: see guard); its readers load it atomically, which the memory model
// calls a race with a plain store, and the race detector would report (and
// could not see the order), so race builds decrement atomically
// (guard_decrement.go).
func decrement(p *int64) { *p-- }
