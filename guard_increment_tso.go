//go:build amd64 && !race

package topic

// increment adds one to *p with a release store: after every memory
// operation before it. amd64 keeps a store after earlier loads and stores
// (TSO), so a plain store is one, and costs no locked instruction as an
// atomic addition would. p must have no other writer meanwhile (a slot of
// the guard, given back by its holder: see guard); its readers load it atomically, which
// the memory model calls a race with a plain store and the race detector
// would report (and could not see the order), so race builds add atomically
// (guard_increment.go).
func increment(p *int64) { *p++ }

// bump adds n to *p, which has one writer at a time (the holder of a slot
// of the guard, see tally; or a follower's reader): a plain addition, as in
// increment, whose order the hand-over between writers provides (the
// slot's give-back, or whatever orders one Read after another).
func bump(p *uint64, n uint64) { *p += n }
