//go:build !unix

package topic_test

import "time"

// processCPU returns -1: the process's CPU time is read on unix systems
// only (see bench_cpu_unix_test.go).
func processCPU() time.Duration { return -1 }
