package natsbridge_test

// The nats-server of the examples: a process of its own, the program of
// ./internal/natsserver (a module apart, so that nats-server is not in
// natsbridge's module graph), built once by TestMain. The tests against
// real servers, embedded and as processes, are in ./internal/servertest.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serverBin is the path of the built nats-server program, set by TestMain.
var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "natsbridge-examples-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin, err = buildServer(dir)
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildServer builds ./internal/natsserver into dir, in its own folder so
// that its own go.mod builds it, with the go command of the test's
// toolchain.
func buildServer(dir string) (string, error) {
	goCmd := "go"
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			goCmd = p
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "natsserver")
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("internal", "natsserver")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build of internal/natsserver: %v\n%s", err, out)
	}
	return bin, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// exampleServer starts a nats-server with JetStream on a free loopback
// port, as `nats-server -js` would run, and returns its client URL; stop
// shuts it down and removes its store. It panics if the server does not
// start: an example cannot go on without it.
func exampleServer() (url string, stop func()) {
	store, err := os.MkdirTemp("", "natsbridge-example-")
	if err != nil {
		panic(err)
	}
	cmd := exec.Command(serverBin, "-host", "127.0.0.1", "-port", "-1", "-store", store, "-stdin")
	// The pipe's write end stays open in this process until Wait: when
	// the test binary dies, the server's standard input ends and it stops.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		panic(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		panic(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if u, ok := strings.CutPrefix(lines.Text(), "ready "); ok {
			url = u
			break
		}
	}
	if url == "" {
		_ = cmd.Wait()
		panic(fmt.Sprintf("the example's nats-server did not start: %s", stderr.String()))
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return url, func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = stdin.Close()
		os.RemoveAll(store)
	}
}
