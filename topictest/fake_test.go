package topictest_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// fakeTB is a testing.TB that keeps what a function of topictest reports,
// so that the tests can check the messages of failures.
type fakeTB struct {
	testing.TB // nil: only the methods below are called
	mu         sync.Mutex
	errs       []string // guarded by mu
	cleanups   []func()
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

// run calls fn with f on a goroutine of its own, as a test's, then f's
// cleanups, last first, and returns what was reported.
func (f *fakeTB) run(fn func(tb testing.TB)) []string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			for _, c := range slices.Backward(f.cleanups) {
				c()
			}
		}()
		fn(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.errs)
}
