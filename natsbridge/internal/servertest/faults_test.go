package servertest_test

// Fault proofs of the bridge's at-least-once path, against real
// nats-servers (the harness of procs_test.go): a consumer process killed
// mid-stream, a server process killed and restarted, a cluster losing the
// stream's leader. Each test checks that no value is lost, bounds or counts
// the duplicates, and logs its figures in one line.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

// The main packages of the fault tests' processes.
const (
	producerProgram = "./faultprocs/producer"
	consumerProgram = "./faultprocs/consumer"
)

// faultBound bounds each fault test, its processes included.
const faultBound = 100 * time.Second

// faultWindow is how many values a fault test's producer publishes ahead of
// the stream's acknowledgements; the export's queue holds twice as many, so
// that the broker never drops one.
const faultWindow = 512

// faultValue is what the in-process fault tests carry: the shape of the
// fault programs' Value.
type faultValue struct{ ID int }

// A faultProc is a fault program running as a process of its own. Its
// methods are for the test's goroutine.
type faultProc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	done   chan struct{} // closed once cmd has exited and been waited for
	stdout *lockedBuffer
	stderr *lockedBuffer
}

// startFaultProc starts the binary bin with args (and -stdin, so that it
// exits if the test binary dies) under ctx, which kills it when it ends.
// With ready, it waits until the program prints its "ready <x>" line and
// returns x. The test's cleanup kills the process, and logs its standard
// error if the test failed.
func startFaultProc(ctx context.Context, t *testing.T, name, bin string, ready bool, args ...string) (*faultProc, string) {
	t.Helper()
	p := &faultProc{t: t, name: name, done: make(chan struct{}), stdout: new(lockedBuffer), stderr: new(lockedBuffer)}
	readyCh := make(chan string, 1)
	p.cmd = exec.CommandContext(ctx, bin, append(args, "-stdin")...)
	// The pipe's write end stays open in this process until Wait.
	if _, err := p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout = io.MultiWriter(p.stdout, &readyWriter{ready: readyCh})
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s (pid %d) standard error:\n%s", name, p.cmd.Process.Pid, p.stderr)
		}
	})
	if !ready {
		return p, ""
	}
	select {
	case x := <-readyCh:
		return p, x
	case <-p.done:
		t.Fatalf("%s exited before it was ready (%v): %s", name, p.cmd.ProcessState, p.stderr)
	case <-ctx.Done():
		t.Fatalf("%s not ready: %v", name, ctx.Err())
	}
	return p, ""
}

func (p *faultProc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill kills the process with SIGKILL, as a crash would, and waits until it
// is gone. It does nothing to a process which has exited.
func (p *faultProc) kill() {
	if p.running() {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exited waits until the process exits and fails the test unless it exits
// with status 0 before ctx ends.
func (p *faultProc) exited(ctx context.Context) {
	p.t.Helper()
	select {
	case <-p.done:
	case <-ctx.Done():
		p.t.Fatalf("%s has not exited: %v; its standard error: %s", p.name, ctx.Err(), p.stderr)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		p.t.Fatalf("%s exited with status %d: %s", p.name, code, p.stderr)
	}
}

// untilCtx polls cond until it holds, and fails the test with state's
// report once ctx ends.
func untilCtx(ctx context.Context, t *testing.T, what string, cond func() bool, state func() string) {
	t.Helper()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(faultBound)
	}
	pollErr(t, time.Until(deadline), what, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("%s", state())
	})
}

// lineCounter counts the lines of a file that only grows, reading only what
// was appended since the last count.
type lineCounter struct {
	path  string
	off   int64
	lines int
}

func (c *lineCounter) count() int {
	f, err := os.Open(c.path)
	if err != nil {
		return c.lines // not created yet
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, c.off, 1<<40))
	if err == nil {
		c.off += int64(len(data))
		c.lines += bytes.Count(data, []byte{'\n'})
	}
	return c.lines
}

// stallClock measures the longest time between two steps of progress.
type stallClock struct {
	mu      sync.Mutex
	last    time.Time
	longest time.Duration
}

func (s *stallClock) tick() {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.last.IsZero() {
		s.longest = max(s.longest, now.Sub(s.last))
	}
	s.last = now
}

func (s *stallClock) get() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.longest
}

// watchSent ticks a stallClock whenever exp's Sent changes, until stop is
// called, which returns the longest time without a change.
func watchSent(exp *natsbridge.Link) (stop func() time.Duration) {
	var clock stallClock
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		last := exp.Stats().Sent
		clock.tick()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if s := exp.Stats().Sent; s != last {
					last = s
					clock.tick()
				}
			}
		}
	}()
	return func() time.Duration {
		close(quit)
		<-done
		return clock.get()
	}
}

// handledLog is a HandleStream function's record of the IDs it handled.
type handledLog struct {
	mu       sync.Mutex
	counts   []int
	distinct int
	calls    int
	stall    stallClock // between calls
}

func newHandledLog(n int) *handledLog { return &handledLog{counts: make([]int, n)} }

func (h *handledLog) handle(_ context.Context, r natsbridge.Imported[faultValue]) error {
	h.stall.tick()
	h.mu.Lock()
	defer h.mu.Unlock()
	id := r.Value.ID
	if id < 0 || id >= len(h.counts) {
		return topic.Permanent(fmt.Errorf("ID %d out of range", id))
	}
	if h.counts[id] == 0 {
		h.distinct++
	}
	h.counts[id]++
	h.calls++
	return nil
}

func (h *handledLog) state() (distinct, calls int, missing []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, c := range h.counts {
		if c == 0 && len(missing) < 20 {
			missing = append(missing, id)
		}
	}
	return h.distinct, h.calls, missing
}

// newFaultNode is newNode for the servers at urls, a process or a
// cluster's nodes: the bridge's ConnectOptions, reconnecting every 20ms,
// then opts.
func newFaultNode(t *testing.T, urls []string, opts ...nats.Option) *node {
	t.Helper()
	all := append(natsbridge.ConnectOptions(), nats.ReconnectWait(20*time.Millisecond))
	n := &node{b: new(topic.Broker), errors: new(errorLog)}
	n.nc = dialNATS(t, urls, append(all, opts...)...)
	n.br = natsbridge.New(n.b, n.nc, natsbridge.Config{OnError: n.errors.add, AckTimeout: 2 * time.Second})
	t.Cleanup(n.br.Close)
	return n
}

// exportStreamPaced makes a synchronous stream export of faultValue to
// subject on n, with a queue of twice faultWindow.
func exportStreamPaced(ctx context.Context, n *node, subject string, s natsbridge.Stream) (*natsbridge.Link, error) {
	return n.br.ExportStream[faultValue](ctx, subject, s, natsbridge.HandlerOptions(topic.Buffer[faultValue](2*faultWindow)))
}

// publishPaced publishes faultValue 0 to count-1 on n's broker, at most
// faultWindow ahead of exp's acknowledged values, and then waits until exp
// has sent them all. It returns an error if ctx ends first.
func publishPaced(ctx context.Context, n *node, exp *natsbridge.Link, count int) error {
	sent := func() int { return int(exp.Stats().Sent) }
	for i := range count {
		for i-sent() >= faultWindow {
			if ctx.Err() != nil {
				return fmt.Errorf("value %d not published: %w; export %+v", i, ctx.Err(), exp.Stats())
			}
			time.Sleep(100 * time.Microsecond)
		}
		n.b.Publish(faultValue{ID: i})
	}
	for sent() < count {
		if ctx.Err() != nil {
			return fmt.Errorf("%d of %d values sent: %w; export %+v", sent(), count, ctx.Err(), exp.Stats())
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

// exportHandler returns the broker's statistics of the handler
// subscription of exp, a stream export on n's broker.
func exportHandler(t *testing.T, n *node, exp *natsbridge.Link) topic.SubscriptionStats {
	t.Helper()
	name := "natsbridge " + exp.Kind() + " " + exp.Subject()
	for _, s := range n.b.Subscriptions() {
		if s.Name == name && s.Handler != nil {
			return s
		}
	}
	t.Fatalf("no handler subscription %q", name)
	return topic.SubscriptionStats{}
}

// checkExportLostNothing fails the test if exp's handler subscription lost
// or dead-lettered a value, or exp did not send count.
func checkExportLostNothing(t *testing.T, n *node, exp *natsbridge.Link, count int) topic.SubscriptionStats {
	t.Helper()
	h := exportHandler(t, n, exp)
	if h.Lost.Total() != 0 || h.Handler.DeadLettered != 0 || exp.Stats().Sent != uint64(count) {
		t.Errorf("the export lost values: handler %+v (%+v), export %+v, want %d sent", h.Lost, *h.Handler, exp.Stats(), count)
	}
	return h
}

// streamMsgs returns how many messages the stream named name holds, asked
// through the servers at urls.
func streamMsgs(ctx context.Context, t *testing.T, urls []string, name string) uint64 {
	t.Helper()
	js := newJetStream(t, dialNATS(t, urls))
	var msgs uint64
	pollAttempts(ctx, t, 10*time.Second, "the stream's info", func(actx context.Context) error {
		st, err := js.Stream(actx, name)
		if err != nil {
			return err
		}
		info, err := st.Info(actx)
		if err != nil {
			return err
		}
		msgs = info.State.Msgs
		return nil
	})
	return msgs
}

// nodeOf returns the name of c's node whose client URL is url.
func nodeOf(c *cluster, url string) string {
	for i := range c.N() {
		if c.URL(i) == url {
			return c.Name(i)
		}
	}
	return url
}

// faultCount is n, the values a fault test sends, or a quarter of it with
// -short (the race step's run): the fault strikes mid-stream either way,
// and what is checked (nothing missed, what is duplicated bounded) is the
// same. Without -short (go test in this folder) they send the full count.
func faultCount(n int) int {
	if testing.Short() {
		return n / 4
	}
	return n
}

// A consumer process killed with SIGKILL mid-stream and started again
// misses nothing: every value the producer process sent is handled, and the
// duplicates (the messages the dead process handled but whose
// acknowledgement the stream did not get) are at most the consumer's
// MaxAckPending.
func TestFaultConsumerProcessKilled(t *testing.T) {
	// 100,000 values through a synchronous export take 20s to 25s here (2
	// cores: the server, both programs and the test); the consumer handles
	// about 30,000 a second.
	n := faultCount(100_000)
	const (
		maxAckPending = 256
		subject       = "fault.consumer"
		durable       = "fault-consumer"
	)
	ctx := faultContext(t, faultBound)
	ps := startServerProcess(t, t.TempDir())
	prodBin, consBin := buildProgram(t, producerProgram), buildProgram(t, consumerProgram)
	out := filepath.Join(t.TempDir(), "ids.txt")
	timeout := "-timeout=" + faultBound.String()
	consArgs := []string{"-url", ps.URL(), "-subject", subject, "-n", strconv.Itoa(n), "-out", out,
		"-durable", durable, "-max-ack-pending", strconv.Itoa(maxAckPending), "-ack-wait", "2s", timeout}

	// The consumer starts once half the values are stored, so that it is
	// killed while it works through a backlog, its pull batch full: it
	// handles values several times faster than the synchronous producer
	// stores them, and without a backlog it would hold few messages.
	start := time.Now()
	prod, _ := startFaultProc(ctx, t, "producer", prodBin, false,
		"-url", ps.URL(), "-subject", subject, "-n", strconv.Itoa(n), "-window", strconv.Itoa(faultWindow), timeout)
	js := newJetStream(t, dialNATS(t, []string{ps.URL()}))
	stored := func() uint64 {
		st, err := js.Stream(ctx, "fault_consumer")
		if err != nil {
			return 0
		}
		info, err := st.Info(ctx)
		if err != nil {
			return 0
		}
		return info.State.Msgs
	}
	untilCtx(ctx, t, "half the values stored", func() bool { return stored() >= uint64(n/2) || !prod.running() },
		func() string { return fmt.Sprintf("%d stored", stored()) })
	cons, _ := startFaultProc(ctx, t, "consumer", consBin, true, consArgs...)

	lines := &lineCounter{path: out}
	untilCtx(ctx, t, "the consumer to handle a third of the values", func() bool {
		return lines.count() >= n/3 || !cons.running() || !prod.running()
	}, func() string { return fmt.Sprintf("%d lines", lines.lines) })
	if !cons.running() || !prod.running() {
		t.Fatalf("a process exited before the kill (consumer running %v, producer running %v): consumer %s; producer %s",
			cons.running(), prod.running(), cons.stderr, prod.stderr)
	}
	killedAt := time.Now()
	cons.kill()
	atKill := lines.count()
	// What the stream holds as delivered to the dead process and not
	// acknowledged: the duplicates to come are among these.
	ci, err := js.Consumer(ctx, "fault_consumer", durable)
	if err != nil {
		t.Fatal(err)
	}
	info, err := ci.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ackPending, storedAtKill := info.NumAckPending, stored()

	cons, seen := startFaultProc(ctx, t, "consumer", consBin, true, consArgs...)
	down := time.Since(killedAt)
	untilCtx(ctx, t, "the restarted consumer to handle values", func() bool {
		return lines.count() > atKill || !cons.running()
	}, func() string { return fmt.Sprintf("%d lines", lines.lines) })
	resumed := time.Since(killedAt)

	prod.exited(ctx)
	cons.exited(ctx)
	took := time.Since(start)

	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, n)
	total := 0
	for l := range strings.Lines(string(data)) {
		id, err := strconv.Atoi(strings.TrimSuffix(l, "\n"))
		if err != nil || id < 0 || id >= n {
			t.Fatalf("line %d of the consumer's file: %q", total+1, l)
		}
		counts[id]++
		total++
	}
	if m := missing(counts, 20); len(m) > 0 {
		t.Errorf("IDs never handled (the first %d): %v", len(m), m)
	}
	dups := total - n
	msgs := streamMsgs(ctx, t, []string{ps.URL()}, "fault_consumer")
	t.Logf("consumer killed: N=%d, duplicates=%d (bound MaxAckPending=%d; %d delivered and unacknowledged at the kill), %d lines and %d stored at the kill, %s IDs seen at restart, down %v (kill to ready), %v until handling again, stream holds %d, producer %s, all done in %v",
		n, dups, maxAckPending, ackPending, atKill, storedAtKill, seen, down.Round(time.Millisecond), resumed.Round(time.Millisecond),
		msgs, strings.TrimSpace(prod.stdout.String()), took.Round(time.Millisecond))
	if dups > maxAckPending {
		t.Errorf("%d duplicates, above MaxAckPending %d", dups, maxAckPending)
	}
	if msgs != uint64(n) {
		t.Errorf("the stream holds %d messages, want %d", msgs, n)
	}
}

// A server process killed with SIGKILL mid-stream and restarted on its store
// loses nothing: the producer's export retries what was not acknowledged,
// the stream stores each value once (the message IDs), and the consumer
// handles every value at least once.
func TestFaultServerProcessRestarted(t *testing.T) {
	n := faultCount(20_000)
	const (
		subject = "fault.restart"
		stream  = "FAULT_RESTART"
	)
	ctx := faultContext(t, faultBound)
	ps := startServerProcess(t, t.TempDir())
	urls := []string{ps.URL()}
	prod, cons := newFaultNode(t, urls), newFaultNode(t, urls)
	s := natsbridge.Stream{Name: stream}

	h := newHandledLog(n)
	hs := linked(t)(cons.br.HandleStream[faultValue](ctx, subject, s,
		natsbridge.Consumer{Durable: "fault-restart", Start: natsbridge.StartEarliest(), AckWait: 2 * time.Second, MaxAckPending: 256},
		h.handle))
	exp := linked(t)(exportStreamPaced(ctx, prod, subject, s))

	start := time.Now()
	stopWatch := watchSent(exp)
	published := make(chan error, 1)
	go func() { published <- publishPaced(ctx, prod, exp, n) }()

	untilCtx(ctx, t, "half the values sent", func() bool { return exp.Stats().Sent >= uint64(n/2) },
		func() string { return fmt.Sprintf("export %+v", exp.Stats()) })
	killedAt := time.Now()
	ps.Kill()
	ps.Restart()
	restarted := time.Since(killedAt)

	if err := <-published; err != nil {
		t.Fatal(err)
	}
	sentIn := time.Since(start)
	exportStall := stopWatch()
	untilCtx(ctx, t, "every value handled", func() bool {
		d, _, _ := h.state()
		return d == n
	}, func() string {
		d, calls, m := h.state()
		return fmt.Sprintf("%d of %d values handled (%d calls), missing %v; handler %+v; export %+v", d, n, calls, m, hs.Stats(), exp.Stats())
	})
	took := time.Since(start)

	eh := checkExportLostNothing(t, prod, exp, n)
	msgs := streamMsgs(ctx, t, urls, stream)
	_, calls, _ := h.state()
	es, hst := exp.Stats(), hs.Stats()
	t.Logf("server killed and restarted (in %v) after %d of %d sent: stream holds %d, handled %d times (%d duplicates), export retries %d (publish errors %d, stream duplicates %d), longest without progress: export %v, handler %v; reconnects producer %d consumer %d; sent in %v, handled in %v",
		restarted.Round(time.Millisecond), n/2, n, msgs, calls, calls-n, eh.Handler.Retried, es.PublishErrors, es.Duplicates,
		exportStall.Round(time.Millisecond), h.stall.get().Round(time.Millisecond),
		prod.br.Stats().Reconnects, cons.br.Stats().Reconnects, sentIn.Round(time.Millisecond), took.Round(time.Millisecond))
	if msgs != uint64(n) {
		t.Errorf("the stream holds %d messages, want %d: the message IDs should have made the retries duplicates", msgs, n)
	}
	if hst.DeadLettered != 0 {
		t.Errorf("the handler dead-lettered %d messages", hst.DeadLettered)
	}
}

// A cluster that loses its stream's leader mid-stream carries the bridge
// on: the producer's export and the consumer's HandleStream go on with the
// new leader (failing over to another node if theirs was the leader), and
// every value is handled at least once.
func TestFaultClusterLeaderLost(t *testing.T) {
	// A synchronous export to a 3-replica stream, with a consumer beside
	// it, sends about 250 values a second here under -race (2 cores, three
	// servers in the test's process): 5,000 take about 20s.
	n := faultCount(5_000)
	const (
		subject = "fault.cluster"
		stream  = "FAULT_CLUSTER"
	)
	ctx := faultContext(t, faultBound)
	begin := time.Now()
	c := startCluster(t, 3)
	ready := time.Since(begin)
	s := natsbridge.Stream{Name: stream, Replicas: 3}

	// Node 0 first for the producer, node 1 first for the consumer.
	prod := newFaultNode(t, c.URLs(), nats.DontRandomize())
	cons := newFaultNode(t, []string{c.URL(1), c.URL(2), c.URL(0)}, nats.DontRandomize())
	if got := prod.nc.ConnectedUrl(); got != c.URL(0) {
		t.Fatalf("producer connected to %s, not node 0 (%s)", got, c.URL(0))
	}
	if got := cons.nc.ConnectedUrl(); got != c.URL(1) {
		t.Fatalf("consumer connected to %s, not node 1 (%s)", got, c.URL(1))
	}

	var exp, hs *natsbridge.Link
	pollAttempts(ctx, t, 30*time.Second, "the stream export (and its R3 stream)", func(actx context.Context) (err error) {
		exp, err = exportStreamPaced(actx, prod, subject, s)
		return err
	})
	h := newHandledLog(n)
	pollAttempts(ctx, t, 30*time.Second, "the stream handler (and its durable consumer)", func(actx context.Context) (err error) {
		hs, err = cons.br.HandleStream[faultValue](actx, subject, s,
			natsbridge.Consumer{Durable: "fault-cluster", Start: natsbridge.StartEarliest(), AckWait: 2 * time.Second, MaxAckPending: 256},
			h.handle)
		return err
	})
	leader := c.StreamLeader(t, stream)

	start := time.Now()
	stopWatch := watchSent(exp)
	published := make(chan error, 1)
	go func() { published <- publishPaced(ctx, prod, exp, n) }()

	untilCtx(ctx, t, "half the values sent", func() bool { return exp.Stats().Sent >= uint64(n/2) },
		func() string { return fmt.Sprintf("export %+v", exp.Stats()) })
	killedAt := time.Now()
	c.Shutdown(leader)
	shutdownTook := time.Since(killedAt)
	newLeader := c.StreamLeader(t, stream)
	elected := time.Since(killedAt)

	if err := <-published; err != nil {
		t.Fatal(err)
	}
	sentIn := time.Since(start)
	exportStall := stopWatch()
	untilCtx(ctx, t, "every value handled", func() bool {
		d, _, _ := h.state()
		return d == n
	}, func() string {
		d, calls, m := h.state()
		return fmt.Sprintf("%d of %d values handled (%d calls), missing %v; handler %+v; export %+v", d, n, calls, m, hs.Stats(), exp.Stats())
	})
	took := time.Since(start)

	eh := checkExportLostNothing(t, prod, exp, n)
	var up []string
	for i := range c.N() {
		if i != leader {
			up = append(up, c.URL(i))
		}
	}
	msgs := streamMsgs(ctx, t, up, stream)
	_, calls, _ := h.state()
	es := exp.Stats()
	t.Logf("stream leader %s lost (shut down in %v, %s elected after %v) after %d of %d sent: stream holds %d (%d stored twice), handled %d times (%d duplicates), export retries %d (publish errors %d, stream duplicates %d), longest without progress: export %v, handler %v; producer on %s (reconnects %d), consumer on %s (reconnects %d); cluster ready in %v, sent in %v, handled in %v",
		c.Name(leader), shutdownTook.Round(time.Millisecond), c.Name(newLeader), elected.Round(time.Millisecond), n/2, n,
		msgs, int(msgs)-n, calls, calls-n, eh.Handler.Retried, es.PublishErrors, es.Duplicates,
		exportStall.Round(time.Millisecond), h.stall.get().Round(time.Millisecond),
		nodeOf(c, prod.nc.ConnectedUrl()), prod.br.Stats().Reconnects, nodeOf(c, cons.nc.ConnectedUrl()), cons.br.Stats().Reconnects,
		ready.Round(time.Millisecond), sentIn.Round(time.Millisecond), took.Round(time.Millisecond))
	if msgs < uint64(n) {
		t.Errorf("the stream holds %d messages, fewer than the %d acknowledged", msgs, n)
	}
	if st := hs.Stats(); st.DeadLettered != 0 {
		t.Errorf("the handler dead-lettered %d messages", st.DeadLettered)
	}
}
