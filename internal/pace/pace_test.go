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

// Run calls publish n times, the i-th no sooner than i periods after its
// start, each with the time since base just before the call, and returns
// a span that holds every call.
func TestRunCallsEachPublicationWhenDue(t *testing.T) {
	const n, rate = 20, 10000
	base := time.Now()
	var stamps []int64
	start, end := Run(n, rate, base, func(stamp int64) { stamps = append(stamps, stamp) })
	if len(stamps) != n {
		t.Fatalf("%d calls, want %d", len(stamps), n)
	}
	period := time.Second / rate
	for i, s := range stamps {
		if due := start + time.Duration(i+1)*period; time.Duration(s) < due {
			t.Errorf("call %d stamped %v, before its due %v", i, time.Duration(s), due)
		}
	}
	if last := time.Duration(stamps[n-1]); last > end {
		t.Errorf("the last call stamped %v, after the end %v", last, end)
	}
}
