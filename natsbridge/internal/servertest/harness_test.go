package servertest_test

// Tests of the fault harness (procs_test.go) with plain nats.go and
// JetStream: they prove that what the fault tests of the bridge rely on
// holds for nats-server itself.

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// faultContext is the bound of a fault test: d, or less if the test binary's
// -timeout comes first, so that a hang fails the test with a message rather
// than panicking the binary.
func faultContext(t *testing.T, d time.Duration) context.Context {
	deadline := time.Now().Add(d)
	if td, ok := t.Deadline(); ok && td.Add(-5*time.Second).Before(deadline) {
		deadline = td.Add(-5 * time.Second)
	}
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	t.Cleanup(cancel)
	return ctx
}

func newJetStream(t *testing.T, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// publishFigures are what a publisher went through.
type publishFigures struct {
	errors     int           // failed attempts, each retried
	duplicates int           // acks which said the message was a duplicate
	stalled    time.Duration // the longest time between two acks
	took       time.Duration
}

// publishRetrying publishes messages first to first+count-1 on subject,
// each with the ID prefix-i and its index as payload, retrying each with
// back-off until it is acknowledged or ctx ends. before, if not nil, is
// called before each message is first sent.
func publishRetrying(ctx context.Context, t *testing.T, js jetstream.JetStream, subject, prefix string, first, count int, before func(i int)) publishFigures {
	t.Helper()
	var f publishFigures
	start := time.Now()
	last := start
	var lastErr error
	for i := first; i < first+count; i++ {
		if before != nil {
			before(i)
		}
		for backoff := 5 * time.Millisecond; ; backoff = min(2*backoff, 500*time.Millisecond) {
			actx, cancel := context.WithTimeout(ctx, time.Second)
			ack, err := js.Publish(actx, subject, []byte(strconv.Itoa(i)), jetstream.WithMsgID(prefix+strconv.Itoa(i)))
			cancel()
			if err == nil {
				if ack.Duplicate {
					f.duplicates++
				}
				now := time.Now()
				f.stalled = max(f.stalled, now.Sub(last))
				last = now
				break
			}
			f.errors++
			lastErr = err
			select {
			case <-ctx.Done():
				t.Fatalf("message %d not acknowledged after %v, %d errors, the last: %v", i, time.Since(start).Round(time.Millisecond), f.errors, lastErr)
			case <-time.After(backoff):
			}
		}
	}
	f.took = time.Since(start)
	return f
}

// fetchAll reads from cons, acknowledging each message, until every index
// from 0 to n-1 has been read at least once. It returns how many times each
// index was read; ctx's end fails the test with the missing ones.
func fetchAll(ctx context.Context, t *testing.T, cons jetstream.Consumer, n int) []int {
	t.Helper()
	counts := make([]int, n)
	distinct := 0
	var lastErr error
	for distinct < n {
		if ctx.Err() != nil {
			t.Fatalf("%d of %d messages read; missing %v; the last error: %v", distinct, n, missing(counts, 20), lastErr)
		}
		batch, err := cons.Fetch(min(n-distinct, 256), jetstream.FetchMaxWait(time.Second))
		if err != nil {
			lastErr = err
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for msg := range batch.Messages() {
			i, err := strconv.Atoi(string(msg.Data()))
			if err != nil || i < 0 || i >= n {
				t.Fatalf("unexpected message %q", msg.Data())
			}
			if counts[i] == 0 {
				distinct++
			}
			counts[i]++
			if err := msg.Ack(); err != nil {
				lastErr = err
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			lastErr = err
		}
	}
	return counts
}

// missing lists the first max indexes never read.
func missing(counts []int, max int) []int {
	var m []int
	for i, c := range counts {
		if c == 0 && len(m) < max {
			m = append(m, i)
		}
	}
	return m
}

func readTwice(counts []int) int {
	d := 0
	for _, c := range counts {
		d += max(c-1, 0)
	}
	return d
}

func TestServerProcessKilledKeepsTheStream(t *testing.T) {
	const n = 1000
	ctx := faultContext(t, 90*time.Second)
	ps := startServerProcess(t, t.TempDir())

	nc := dialNATS(t, []string{ps.URL()})
	js := newJetStream(t, nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     "KILLED",
		Subjects: []string{"killed.>"},
		Storage:  jetstream.FileStorage,
	}); err != nil {
		t.Fatal(err)
	}
	pub := publishRetrying(ctx, t, js, "killed.msg", "killed-", 0, n, nil)
	if pub.errors != 0 || pub.duplicates != 0 {
		t.Errorf("without a fault: %d publish errors, %d duplicates", pub.errors, pub.duplicates)
	}
	nc.Close()

	start := time.Now()
	ps.Kill()
	ps.Restart()
	t.Logf("%d messages published in %v; killed and restarted in %v", n, pub.took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	nc = dialNATS(t, []string{ps.URL()})
	js = newJetStream(t, nc)
	var state jetstream.StreamState
	pollErr(t, 10*time.Second, "the stream after the restart", func() error {
		st, err := js.Stream(ctx, "KILLED")
		if err != nil {
			return err
		}
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		state = info.State
		return nil
	})
	if state.Msgs != n || state.FirstSeq != 1 || state.LastSeq != n {
		t.Fatalf("after SIGKILL the stream holds %d messages, sequences %d to %d; want %d, 1 to %d", state.Msgs, state.FirstSeq, state.LastSeq, n, n)
	}

	cons, err := js.CreateOrUpdateConsumer(ctx, "KILLED", jetstream.ConsumerConfig{
		Durable:   "reader",
		AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	counts := fetchAll(ctx, t, cons, n)
	if d := readTwice(counts); d != 0 {
		t.Errorf("%d messages read more than once", d)
	}
}

func TestClusterLeaderFailover(t *testing.T) {
	t.Run("PublisherOnTheLeader", func(t *testing.T) { testLeaderFailover(t, true) })
	t.Run("PublisherOnAFollower", func(t *testing.T) { testLeaderFailover(t, false) })
}

// testLeaderFailover publishes to a 3-replica stream through node A, shuts
// the stream's leader down half way and checks that a reader on another
// node gets every message. A is the leader if onLeader: the publisher then
// loses its server too.
func testLeaderFailover(t *testing.T, onLeader bool) {
	const n, stream = 1000, "FAILOVER"
	ctx := faultContext(t, 50*time.Second)
	start := time.Now()
	c := startCluster(t, 3)
	t.Logf("3-node cluster ready in %v", time.Since(start).Round(time.Millisecond))

	admin := newJetStream(t, dialNATS(t, c.URLs()))
	pollAttempts(ctx, t, 30*time.Second, "the stream's creation", func(actx context.Context) error {
		_, err := admin.CreateStream(actx, jetstream.StreamConfig{
			Name:     stream,
			Subjects: []string{"failover.>"},
			Storage:  jetstream.FileStorage,
			Replicas: 3,
		})
		return err
	})
	leader := c.StreamLeader(t, stream)
	a, reader := (leader+1)%3, (leader+2)%3
	if onLeader {
		a, reader = leader, (leader+1)%3
	}

	// A first, then the others, in this order.
	urls := []string{c.URL(a)}
	for i := range c.N() {
		if i != a {
			urls = append(urls, c.URL(i))
		}
	}
	pnc := dialNATS(t, urls, nats.DontRandomize())
	if got := pnc.ConnectedUrl(); got != c.URL(a) {
		t.Fatalf("publisher connected to %s, not node A %s", got, c.URL(a))
	}
	pjs := newJetStream(t, pnc)

	var killedAt time.Time
	var shutdownTook time.Duration
	killed := make(chan struct{})
	pub := publishRetrying(ctx, t, pjs, "failover.msg", "failover-", 0, n, func(i int) {
		if i == n/2 {
			killedAt = time.Now()
			go func() {
				defer close(killed)
				c.Shutdown(leader)
				shutdownTook = time.Since(killedAt)
			}()
		}
	})
	<-killed
	newLeader := c.StreamLeader(t, stream)

	rjs := newJetStream(t, dialNATS(t, []string{c.URL(reader)}))
	var info *jetstream.StreamInfo
	var cons jetstream.Consumer
	pollAttempts(ctx, t, 30*time.Second, "the stream and a consumer on the reader's node", func(actx context.Context) error {
		st, err := rjs.Stream(actx, stream)
		if err != nil {
			return err
		}
		if info, err = st.Info(actx); err != nil {
			return err
		}
		cons, err = st.CreateOrUpdateConsumer(actx, jetstream.ConsumerConfig{
			Durable:   "reader",
			AckPolicy: jetstream.AckExplicitPolicy,
		})
		return err
	})
	counts := fetchAll(ctx, t, cons, n)

	t.Logf("publisher on %s (%s), stream leader %s shut down (in %v) before message %d, new leader %s, reader on %s",
		c.Name(a), map[bool]string{true: "the leader", false: "a follower"}[onLeader],
		c.Name(leader), shutdownTook.Round(time.Millisecond), n/2, c.Name(newLeader), c.Name(reader))
	t.Logf("%d messages published in %v: %d failed attempts retried, %d acks of duplicates, %d publisher reconnects, longest time without an ack %v",
		n, pub.took.Round(time.Millisecond), pub.errors, pub.duplicates, pnc.Stats().Reconnects, pub.stalled.Round(time.Millisecond))
	t.Logf("stream holds %d messages (%d stored twice); the reader read %d more than once; everything read %v after the shutdown",
		info.State.Msgs, int(info.State.Msgs)-n, readTwice(counts), time.Since(killedAt).Round(time.Millisecond))
	if info.State.Msgs < n {
		t.Errorf("stream holds %d messages, fewer than the %d acknowledged", info.State.Msgs, n)
	}
	if newLeader == leader {
		t.Errorf("the stream's leader is still %s", c.Name(leader))
	}

	// The old leader, restarted, catches up as a follower.
	restarted := time.Now()
	c.Restart(leader)
	waitFor(t, 30*time.Second, "the restarted node to catch up with the stream", func() bool {
		s := c.Server(leader)
		return s != nil && s.JetStreamIsStreamCurrent(server.DEFAULT_GLOBAL_ACCOUNT, stream)
	})
	t.Logf("%s restarted and current in %v", c.Name(leader), time.Since(restarted).Round(time.Millisecond))
}
