//go:build !unix

package topic_test

import (
	"os"
	"os/exec"
)

// runSelf runs this test binary again with args, and env added to its
// environment, and returns its standard output and error together (see
// child_unix_test.go, where the go command can cache the package's tests).
func runSelf(env []string, args ...string) ([]byte, error) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd.CombinedOutput()
}
