//go:build unix

package topic_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used, user and system,
// or -1 if the system does not tell it (see bench_cpu_other_test.go).
func processCPU() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return -1
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
