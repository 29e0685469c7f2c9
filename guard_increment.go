//go:build !amd64 || race

package topic

import "sync/atomic"

// increment adds one to *p after every memory operation before it:
// atomically, on the architectures where a plain store may pass earlier ones,
// and under the race detector, which learns the order from it (see
// guard_increment_tso.go).
func increment(p *int64) { atomic.AddInt64(p, 1) }

// bump adds n to *p, which has one writer at a time (the holder of a slot
// of the guard, see tally; or a follower's reader): atomically here, as
// increment does.
func bump(p *uint64, n uint64) { atomic.AddUint64(p, n) }
