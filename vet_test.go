package topic_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A Broker must not be copied after first use, and go vet's copylocks check
// says so. The program in testdata/copybroker copies a used Broker by
// assignment and by passing it to a function taking a Broker by value.
func TestGoVetReportsACopiedBroker(t *testing.T) {
	t.Parallel()
	out, err := goCommand(t, "vet", "./testdata/copybroker").CombinedOutput()
	if err == nil {
		t.Fatalf("go vet accepted a copied Broker; output:\n%s", out)
	}
	for _, want := range []string{
		"main.go:10:7: assignment copies lock value to c: github.com/seedaa7df82c/topic.Broker",
		"main.go:12:6: call of use copies lock value: github.com/seedaa7df82c/topic.Broker",
		"main.go:15:12: use passes lock by value: github.com/seedaa7df82c/topic.Broker",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("go vet output lacks %q; output:\n%s", want, out)
		}
	}
}

// goCommand returns the go command of the toolchain running the test (go
// test puts it first on PATH) with args, run with that toolchain and no
// GOFLAGS of the caller's.
func goCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	cmd := exec.Command(goCmd, args...)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=")
	return cmd
}
