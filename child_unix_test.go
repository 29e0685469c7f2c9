//go:build unix

package topic_test

import (
	"io"
	"os"
	"os/exec"
	"syscall"
)

// runSelf runs this test binary again with args, and env added to its
// environment, and returns its standard output and error together, as
// exec.Command(os.Args[0], args...).CombinedOutput does. It starts the
// process with syscall.StartProcess, which the go command's test cache does
// not see: os.StartProcess records the executable as an input of the test,
// and a test binary is always new, so that a package with one such test
// is never cached (go test -run of these three tests twice: cached the
// second time only with runSelf).
func runSelf(env []string, args ...string) ([]byte, error) {
	in, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	inW.Close() // the child reads nothing
	defer in.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	pid, _, err := syscall.StartProcess(os.Args[0], append([]string{os.Args[0]}, args...), &syscall.ProcAttr{
		Env:   append(os.Environ(), env...),
		Files: []uintptr{in.Fd(), w.Fd(), w.Fd()},
	})
	w.Close()
	if err != nil {
		return nil, err
	}
	out, readErr := io.ReadAll(r)
	p, err := os.FindProcess(pid)
	if err != nil {
		return out, err
	}
	state, err := p.Wait()
	switch {
	case err != nil:
		return out, err
	case !state.Success():
		return out, &exec.ExitError{ProcessState: state}
	}
	return out, readErr
}
