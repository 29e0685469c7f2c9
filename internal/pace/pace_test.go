package pace

import (
	"testing"
	"time"
)

// Wait never returns before its due, whether the due is far (a sleep,
// then yields), near (yields only) or passed (at once).
func TestWaitReturnsNoSoonerThanDue(t *testing.T) {
	base := time.Now()
	for _, due := range []time.Duration{-time.Millisecond, 0, 50 * time.Microsecond, 150 * time.Microsecond, 2 * time.Millisecond, 5 * time.Millisecond} {
		start := time.Since(base)
		due := start + due
		Wait(base, due)
		if now := time.Since(base); now < due {
			t.Errorf("returned %v before its due", due-now)
		}
	}
}
