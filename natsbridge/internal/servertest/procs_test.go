package servertest_test

// The harness of the fault tests against real nats-servers: a server as an
// OS process of its own, which SIGKILL can stop mid-write (procServer), and
// an in-process JetStream cluster whose nodes can be stopped and started
// again one by one (cluster).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// serverProgram is the folder of the main package startServerProcess runs,
// a module of its own beside this one.
const serverProgram = "../natsserver"

// procReadyTimeout bounds how long a server, a process or a cluster, takes
// to be ready.
const procReadyTimeout = 30 * time.Second

func TestMain(m *testing.M) {
	code := m.Run()
	programs.removeAll()
	os.Exit(code)
}

// programs are the binaries buildProgram built, in a folder of their own
// that TestMain removes.
var programs programCache

type programCache struct {
	mu     sync.Mutex
	dir    string
	builds map[string]*programBuild
}

type programBuild struct {
	once sync.Once
	path string
	err  error
}

func (c *programCache) get(pkg string) (*programBuild, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir == "" {
		dir, err := os.MkdirTemp("", "natsbridge-programs-")
		if err != nil {
			return nil, "", err
		}
		c.dir, c.builds = dir, make(map[string]*programBuild)
	}
	b, ok := c.builds[pkg]
	if !ok {
		b = new(programBuild)
		c.builds[pkg] = b
	}
	return b, filepath.Join(c.dir, fmt.Sprintf("%d-%s", len(c.builds), filepath.Base(pkg))), nil
}

func (c *programCache) removeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir != "" {
		os.RemoveAll(c.dir)
		c.dir, c.builds = "", nil
	}
}

// buildProgram builds the main package in the folder pkg (a path such as
// "../natsserver", relative to the tests' working directory, this module's
// root) once per run of the test binary, and returns the binary's path.
// A failed build fails every test that asks for it.
func buildProgram(t testing.TB, pkg string) string {
	t.Helper()
	b, path, err := programs.get(pkg)
	if err != nil {
		t.Fatal(err)
	}
	b.once.Do(func() {
		// go test puts the go command that runs it first in PATH and sets
		// GOROOT: the binary is built by the toolchain of the test.
		goCmd := "go"
		if root := os.Getenv("GOROOT"); root != "" {
			if p := filepath.Join(root, "bin", "go"); fileExists(p) {
				goCmd = p
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		// Built in its folder, so that a program of another module is
		// built by that module's go.mod.
		cmd := exec.CommandContext(ctx, goCmd, "build", "-o", path, ".")
		cmd.Dir = pkg
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
			return
		}
		b.path = path
		t.Logf("built %s in %v", pkg, time.Since(start).Round(time.Millisecond))
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// freePort returns a loopback TCP port which was free a moment ago: another
// process may take it before the caller binds it, so the caller retries on
// a bind failure.
func freePort(t testing.TB) int {
	t.Helper()
	return freePorts(t, 1)[0]
}

// freePorts returns n distinct loopback ports, free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close() // held until all are chosen, so that they differ
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// errAddrInUse marks a start that failed because a port was taken.
var errAddrInUse = errors.New("address already in use")

// A procServer is a nats-server with JetStream, file storage in a folder of
// the test's, running as a process of its own (../natsserver). Its
// methods are for the test's goroutine.
type procServer struct {
	t     testing.TB
	bin   string
	port  int
	store string

	cmd    *exec.Cmd
	done   chan struct{} // closed once cmd has exited and been waited for
	stderr *lockedBuffer
	url    string
}

// startServerProcess starts a nats-server process on a free loopback port
// with its JetStream store in the folder store, and waits until it accepts
// connections. The test's cleanup kills it.
func startServerProcess(t testing.TB, store string) *procServer {
	t.Helper()
	ps := &procServer{t: t, bin: buildProgram(t, serverProgram), store: store}
	t.Cleanup(ps.Kill)
	var err error
	for range 5 {
		ps.port = freePort(t)
		if err = ps.start(); !errors.Is(err, errAddrInUse) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// URL is the server's client URL, the same across restarts.
func (ps *procServer) URL() string { return ps.url }

// Port is the server's client port.
func (ps *procServer) Port() int { return ps.port }

// Running reports whether the process is still running.
func (ps *procServer) Running() bool {
	if ps.cmd == nil {
		return false
	}
	select {
	case <-ps.done:
		return false
	default:
		return true
	}
}

// Kill kills the process with SIGKILL, as a crash would, and waits for it
// to be gone. It does nothing if the process is not running.
func (ps *procServer) Kill() { ps.signal(syscall.SIGKILL) }

// Stop stops the server gracefully, with SIGTERM, and waits for the process
// to exit.
func (ps *procServer) Stop() { ps.signal(syscall.SIGTERM) }

func (ps *procServer) signal(sig syscall.Signal) {
	if !ps.Running() {
		return
	}
	_ = ps.cmd.Process.Signal(sig)
	select {
	case <-ps.done:
	case <-time.After(procReadyTimeout):
		_ = ps.cmd.Process.Kill()
		<-ps.done
		ps.t.Errorf("nats-server process did not exit on %v in %v", sig, procReadyTimeout)
	}
}

// Restart kills the process if it is still running, then starts the server
// again on the same port and store and waits until it accepts connections.
func (ps *procServer) Restart() {
	ps.t.Helper()
	ps.Kill()
	// The port is this server's, but another process may have taken it
	// meanwhile: try a few times before failing.
	var err error
	for delay := 10 * time.Millisecond; ; delay *= 2 {
		if err = ps.start(); !errors.Is(err, errAddrInUse) || delay > time.Second {
			break
		}
		time.Sleep(delay)
	}
	if err != nil {
		ps.t.Fatal(err)
	}
}

// start starts the process and waits for its "ready" line.
func (ps *procServer) start() error {
	ready := make(chan string, 1)
	cmd := exec.Command(ps.bin,
		"-host", "127.0.0.1",
		"-port", fmt.Sprint(ps.port),
		"-store", ps.store,
		"-stdin", // so that it stops if the test binary dies without its cleanups
	)
	// The pipe's write end stays open in this process until Wait: its end
	// is the end of this process.
	if _, err := cmd.StdinPipe(); err != nil {
		return err
	}
	cmd.Stdout = &readyWriter{ready: ready}
	ps.stderr = new(lockedBuffer)
	cmd.Stderr = ps.stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	ps.cmd, ps.done = cmd, done

	select {
	case url := <-ready:
		ps.url = url
		return nil
	case <-done:
		msg := strings.TrimSpace(ps.stderr.String())
		if strings.Contains(msg, "address already in use") {
			return fmt.Errorf("nats-server process on port %d: %w: %s", ps.port, errAddrInUse, msg)
		}
		return fmt.Errorf("nats-server process on port %d exited before ready (%v): %s", ps.port, cmd.ProcessState, msg)
	case <-time.After(procReadyTimeout):
		ps.Kill()
		return fmt.Errorf("nats-server process on port %d not ready in %v: %s", ps.port, procReadyTimeout, ps.stderr.String())
	}
}

// readyWriter is the process's standard output: it passes on the URL of the
// first line "ready <url>" and drops the rest.
type readyWriter struct {
	ready chan<- string
	line  []byte
	sent  bool
}

func (w *readyWriter) Write(p []byte) (int, error) {
	if w.sent {
		return len(p), nil
	}
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := strings.TrimSpace(string(w.line[:i]))
		w.line = w.line[i+1:]
		if url, ok := strings.CutPrefix(line, "ready "); ok {
			w.ready <- url
			w.sent, w.line = true, nil
			return len(p), nil
		}
	}
}

// lockedBuffer is a bytes.Buffer for a process's output, read while the
// process may still write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A cluster is n nats-servers in this process, routed to each other on
// loopback, with clustered JetStream on file storage. Nodes are numbered
// from 0; the methods are for the test's goroutine, but Shutdown and
// Restart of one node may run beside calls about the others.
type cluster struct {
	t     testing.TB
	name  string
	nodes []*clusterNode
}

type clusterNode struct {
	mu   sync.Mutex
	opts server.Options // a copy for each start: the server changes its own
	// routes are the cluster's route URLs, parsed again for each start.
	routes string
	s      *server.Server // nil while down
	fatal  *fatalLog
}

// startCluster starts an n-node cluster and waits until every node is
// ready and JetStream has a meta leader which knows all n of them. The
// test's cleanup shuts it down.
func startCluster(t testing.TB, n int) *cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("startCluster: %d nodes", n)
	}
	// The directory first: cleanups run last first, so the servers, which
	// write in it until they are shut down, are shut down before it is
	// removed (the other way round, its removal failed now and then with
	// "directory not empty").
	base := t.TempDir()
	c := &cluster{t: t, name: "natsbridge-test"}
	t.Cleanup(c.shutdownAll)
	var err error
	for try := range 5 {
		if err = c.start(n, filepath.Join(base, fmt.Sprint(try))); !errors.Is(err, errAddrInUse) {
			break
		}
		c.shutdownAll()
	}
	if err != nil {
		t.Fatal(err)
	}
	c.waitReady()
	return c
}

// start configures n nodes on ports free a moment ago, storing in base,
// and starts them.
func (c *cluster) start(n int, base string) error {
	ports := freePorts(c.t, 2*n)
	routes := make([]string, n)
	for i := range routes {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", ports[n+i])
	}
	c.nodes = make([]*clusterNode, n)
	for i := range c.nodes {
		c.nodes[i] = &clusterNode{
			opts: server.Options{
				ServerName:         fmt.Sprintf("n%d", i),
				Host:               "127.0.0.1",
				Port:               ports[i],
				NoLog:              true,
				NoSigs:             true,
				JetStream:          true,
				StoreDir:           filepath.Join(base, fmt.Sprintf("n%d", i)),
				JetStreamMaxMemory: 64 << 20,
				JetStreamMaxStore:  512 << 20,
				Cluster: server.ClusterOpts{
					Name: c.name,
					Host: "127.0.0.1",
					Port: ports[n+i],
				},
			},
			// Every node, itself included: JetStream expects as many
			// peers as there are routes.
			routes: strings.Join(routes, ","),
		}
	}
	// All at once: a node waits for its routes to be ready.
	for _, nd := range c.nodes {
		nd.launch()
	}
	var errs []error
	for i, nd := range c.nodes {
		if err := nd.ready(); err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// launch creates the node's server and starts it.
func (nd *clusterNode) launch() {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	opts := nd.opts
	opts.Routes = server.RoutesFromStr(nd.routes)
	s, err := server.NewServer(&opts)
	nd.fatal = &fatalLog{ch: make(chan string, 1)}
	if err != nil {
		nd.fatal.Fatalf("%v", err)
		return
	}
	s.SetLogger(nd.fatal, false, false)
	nd.s = s
	go s.Start()
}

// ready waits until the node's server accepts connections, or failed.
func (nd *clusterNode) ready() error {
	nd.mu.Lock()
	s, fatal := nd.s, nd.fatal
	nd.mu.Unlock()
	deadline := time.Now().Add(procReadyTimeout)
	for {
		select {
		case msg := <-fatal.ch:
			nd.shutdown()
			if strings.Contains(msg, "address already in use") {
				return fmt.Errorf("%w: %s", errAddrInUse, msg)
			}
			return errors.New(msg)
		default:
		}
		if s != nil && s.ReadyForConnections(50*time.Millisecond) {
			return nil
		}
		if time.Now().After(deadline) {
			nd.shutdown()
			return fmt.Errorf("not ready in %v", procReadyTimeout)
		}
	}
}

func (nd *clusterNode) server() *server.Server {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.s
}

func (nd *clusterNode) shutdown() {
	nd.mu.Lock()
	s := nd.s
	nd.s = nil
	nd.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// fatalLog is a server's logger: it keeps the first fatal error, after
// which the server does not work, and drops everything else.
type fatalLog struct{ ch chan string }

func (l *fatalLog) Fatalf(format string, v ...any) {
	select {
	case l.ch <- fmt.Sprintf(format, v...):
	default:
	}
}
func (*fatalLog) Noticef(string, ...any) {}
func (*fatalLog) Warnf(string, ...any)   {}
func (*fatalLog) Errorf(string, ...any)  {}
func (*fatalLog) Debugf(string, ...any)  {}
func (*fatalLog) Tracef(string, ...any)  {}

// waitReady waits until JetStream has a meta leader which counts every
// running node as a peer, and every running node answers a JetStream
// request.
func (c *cluster) waitReady() {
	c.t.Helper()
	var running []int
	for i, nd := range c.nodes {
		if nd.server() != nil {
			running = append(running, i)
		}
	}
	pollErr(c.t, procReadyTimeout, "the cluster's JetStream meta leader", func() error {
		for _, i := range running {
			s := c.nodes[i].server()
			if s != nil && s.JetStreamIsLeader() {
				if peers := s.JetStreamClusterPeers(); len(peers) < len(running) {
					return fmt.Errorf("the meta leader %s knows %d peers %v", s.Name(), len(peers), peers)
				}
				return nil
			}
		}
		return errors.New("no meta leader")
	})
	for _, i := range running {
		nc, err := nats.Connect(c.URL(i), nats.NoReconnect())
		if err != nil {
			c.t.Fatalf("node %d: %v", i, err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			c.t.Fatal(err)
		}
		pollErr(c.t, procReadyTimeout, fmt.Sprintf("JetStream on node %d", i), func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := js.AccountInfo(ctx)
			return err
		})
		nc.Close()
	}
}

// pollErr polls f every few milliseconds until it returns nil, or fails the
// test with f's last error once d has passed.
func pollErr(t testing.TB, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %v", d, what, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pollAttempts calls f until it returns nil, for at most d, giving each
// attempt a context of its own of at most attempt (within ctx). A request
// to a cluster whose meta leader is not yet elected, or that lost its
// stream's leader, may go unanswered: it must cost one attempt, not the
// whole test's context (a cold CI run failed so, at a durable consumer's
// creation).
func pollAttempts(ctx context.Context, t testing.TB, d time.Duration, what string, f func(context.Context) error) {
	t.Helper()
	const attempt = 5 * time.Second
	pollErr(t, d, what, func() error {
		actx, cancel := context.WithTimeout(ctx, attempt)
		defer cancel()
		return f(actx)
	})
}

// N is the number of nodes.
func (c *cluster) N() int { return len(c.nodes) }

// URLs are the client URLs of all the nodes, down or not, in order.
func (c *cluster) URLs() []string {
	urls := make([]string, len(c.nodes))
	for i := range c.nodes {
		urls[i] = c.URL(i)
	}
	return urls
}

// URL is the client URL of node i, the same across restarts.
func (c *cluster) URL(i int) string {
	return fmt.Sprintf("nats://127.0.0.1:%d", c.nodes[i].opts.Port)
}

// Name is the ServerName of node i.
func (c *cluster) Name(i int) string { return c.nodes[i].opts.ServerName }

// Server is node i's server, or nil while the node is down.
func (c *cluster) Server(i int) *server.Server { return c.nodes[i].server() }

// Shutdown stops node i (gracefully: the server's Shutdown) and waits until
// it has stopped. It does nothing to a node which is down.
func (c *cluster) Shutdown(i int) { c.nodes[i].shutdown() }

// Restart starts node i again, after shutting it down if it runs, on the
// same ports and store, and waits until it accepts connections and its
// JetStream is current with the meta leader.
func (c *cluster) Restart(i int) {
	c.t.Helper()
	nd := c.nodes[i]
	nd.shutdown()
	var err error
	for delay := 10 * time.Millisecond; ; delay *= 2 {
		nd.launch()
		if err = nd.ready(); !errors.Is(err, errAddrInUse) || delay > time.Second {
			break
		}
		time.Sleep(delay)
	}
	if err != nil {
		c.t.Fatalf("restart of node %d: %v", i, err)
	}
	waitFor(c.t, procReadyTimeout, fmt.Sprintf("node %d's JetStream to be current", i), func() bool {
		s := nd.server()
		return s != nil && s.JetStreamIsCurrent()
	})
}

func (c *cluster) shutdownAll() {
	var wg sync.WaitGroup
	for _, nd := range c.nodes {
		wg.Go(nd.shutdown)
	}
	wg.Wait()
}

// StreamLeader waits until a running node leads the stream (of the global
// account) and returns its index.
func (c *cluster) StreamLeader(t testing.TB, stream string) int {
	t.Helper()
	leader := -1
	waitFor(t, procReadyTimeout, fmt.Sprintf("a leader of stream %s", stream), func() bool {
		for i, nd := range c.nodes {
			if s := nd.server(); s != nil && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
				leader = i
				return true
			}
		}
		return false
	})
	return leader
}

// dialNATS connects to the servers at urls with nats.go, reconnecting
// forever and quickly, then opts; the test's cleanup closes the connection.
func dialNATS(t testing.TB, urls []string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	all := []nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectWait(20 * time.Millisecond),
		nats.ReconnectJitter(0, 0),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}), // not nats.go's default, which prints
	}
	nc, err := nats.Connect(strings.Join(urls, ","), append(all, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
