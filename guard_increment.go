//go:build !amd64 || race

package topic

import "sync/atomic"

// increment adds one to *p after every memory operation before it:
// atomically, on the architectures where a plain store may pass earlier ones,
// and under the race detector, which learns the order from it (see
// guard_increment_tso.go).
func increment(p *int64) { atomic.AddInt64(p, 1) }
