package compare_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic/compare"
)

// TestEveryLibDeliversByTopic checks the adapters: paced so that no library
// drops, every publication reaches the subscribers of its own topic and no
// other, and Close leaves no goroutine behind.
func TestEveryLibDeliversByTopic(t *testing.T) {
	const n = 20
	for _, lib := range compare.Libs {
		t.Run(lib.Name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			bus := lib.New()
			first, last := compare.NewCounter(n), compare.NewCounter(n)
			bus.Subscribe(0, first)
			bus.Subscribe(compare.Topics-1, last)
			for _, tc := range []struct {
				topic int
				c     *compare.Counter
			}{{0, first}, {compare.Topics - 1, last}} {
				publish := bus.Publisher(tc.topic)
				for i := range int64(n) {
					publish(value)
					if !eventually(func() bool { return tc.c.Load() == i+1 }) {
						t.Fatalf("topic %d: %d received after %d publications", tc.topic, tc.c.Load(), i+1)
					}
				}
			}
			bus.Close()
			if got := first.Load(); got != n {
				t.Errorf("topic 0 received %d, want %d", got, n)
			}
			if got := last.Load(); got != n {
				t.Errorf("topic %d received %d, want %d", compare.Topics-1, got, n)
			}
			if !eventually(func() bool { return runtime.NumGoroutine() <= base }) {
				t.Errorf("%d goroutines left after Close", runtime.NumGoroutine()-base)
			}
		})
	}
}

// TestNamesAreUnique checks that every library has its own lib= key.
func TestNamesAreUnique(t *testing.T) {
	seen := make(map[string]bool)
	for _, lib := range compare.Libs {
		if seen[lib.Name] {
			t.Errorf("lib=%s twice", lib.Name)
		}
		seen[lib.Name] = true
	}
}

// eventually reports whether cond holds within a second.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(time.Second); !cond(); {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Microsecond)
	}
	return true
}
