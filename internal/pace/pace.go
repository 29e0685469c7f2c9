// Package pace paces a publisher to a fixed rate, for the latency
// benchmarks of the core and of the comparison: they offer the same rates
// the same way, so that their figures compare.
package pace

import (
	"runtime"
	"time"
)

// Wait returns once due has passed since base. It sleeps while due is more
// than 200 µs away (to 100 µs before it: a sleep may overrun), and yields
// the processor (runtime.Gosched) until it is due, so that the consumers
// run in between. A due already passed returns at once.
func Wait(base time.Time, due time.Duration) {
	for {
		wait := due - time.Since(base)
		if wait <= 0 {
			return
		}
		if wait > 200*time.Microsecond {
			time.Sleep(wait - 100*time.Microsecond)
		} else {
			runtime.Gosched()
		}
	}
}

// Run calls publish n times at rate a second, each call when it is due
// (see Wait), with the time since base just before the call: the stamp a
// latency is measured from. It returns when its first period began and
// when the last call returned, as times since base.
func Run(n, rate int, base time.Time, publish func(stamp int64)) (start, end time.Duration) {
	period := time.Second / time.Duration(rate)
	start = time.Since(base)
	due := start
	for range n {
		due += period
		Wait(base, due)
		publish(int64(time.Since(base)))
	}
	return start, time.Since(base)
}
