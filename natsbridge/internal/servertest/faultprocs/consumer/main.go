// Command consumer is the consuming process of the fault tests
// (faults_test.go): a topic.Broker and a natsbridge HandleStream link,
// with a durable consumer, on the stream of Value messages the producer
// fills.
//
// Its function appends the value's ID, in decimal, and a newline to the
// file -out (a plain write: a SIGKILL keeps what the page cache holds)
// before it returns nil, so that the file lists every call whose message
// the stream was then told was handled. At start it reads the file to know
// which IDs it has seen (a partial last line, cut by a crash mid-write, is
// removed: its call never returned). It prints "ready <seen>" on standard
// output once the link is made, and exits 0 once it has seen every ID
// from 0 to n-1 at least once.
//
// It exits 1, with "fatal: ..." on standard error, if an ID is out of
// range or -timeout passes first. With -stdin it also exits once standard
// input ends (the test that started it died).
//
//	consumer -url nats://127.0.0.1:4222 -subject fault.values -n 100000 -out ids.txt
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

// Value is what the fault tests carry; the producer has the same.
type Value struct{ ID int }

func main() {
	var (
		url           = flag.String("url", nats.DefaultURL, "the NATS server's URL (comma-separated for several)")
		subject       = flag.String("subject", "fault.values", "the subject of the stream")
		n             = flag.Int("n", 100_000, "the IDs to see: 0 to n-1")
		out           = flag.String("out", "", "the file to which each handled ID is appended; required")
		durable       = flag.String("durable", "fault-consumer", "the durable consumer's name")
		maxAckPending = flag.Int("max-ack-pending", 256, "the durable consumer's MaxAckPending")
		ackWait       = flag.Duration("ack-wait", 2*time.Second, "the durable consumer's AckWait")
		timeout       = flag.Duration("timeout", 2*time.Minute, "how long it may take")
		stdin         = flag.Bool("stdin", false, "exit when standard input ends")
	)
	flag.Parse()
	if *out == "" || *n < 1 {
		fail("-out is required and -n must be positive")
	}
	if *stdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			fail("standard input ended")
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	seen := make([]bool, *n)
	distinct, err := reread(*out, seen)
	if err != nil {
		fail(err.Error())
	}
	file, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fail(err.Error())
	}
	all := make(chan struct{})
	if distinct == *n {
		close(all)
	}

	nc, err := nats.Connect(*url, append(natsbridge.ConnectOptions(),
		nats.ReconnectWait(20*time.Millisecond),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	)...)
	if err != nil {
		fail(err.Error())
	}
	var errs atomic.Int64
	b := new(topic.Broker)
	br := natsbridge.New(b, nc, natsbridge.Config{OnError: func(e *natsbridge.Error) {
		if errs.Add(1) <= 10 {
			fmt.Fprintln(os.Stderr, "error:", e)
		}
	}})
	line := make([]byte, 0, 24)
	// One goroutine calls f: seen, distinct and line are its alone.
	f := func(_ context.Context, r natsbridge.Imported[Value]) error {
		id := r.Value.ID
		if id < 0 || id >= *n {
			return topic.Permanent(fmt.Errorf("ID %d out of range", id))
		}
		line = append(strconv.AppendInt(line[:0], int64(id), 10), '\n')
		if _, err := file.Write(line); err != nil {
			return err // not recorded: delivered again
		}
		if !seen[id] {
			seen[id] = true
			if distinct++; distinct == *n {
				close(all)
			}
		}
		return nil
	}
	link, err := br.HandleStream[Value](ctx, *subject, natsbridge.Stream{},
		natsbridge.Consumer{Durable: *durable, Start: natsbridge.StartEarliest(), AckWait: *ackWait, MaxAckPending: *maxAckPending}, f)
	if err != nil {
		fail(err.Error())
	}
	fmt.Printf("ready %d\n", distinct)

	select {
	case <-all:
	case <-ctx.Done():
		fail(fmt.Sprintf("not every ID seen: %v; handler %+v", ctx.Err(), link.Stats()))
	}
	st := link.Stats()
	br.Close()
	_ = nc.Drain()
	if err := file.Close(); err != nil {
		fail(err.Error())
	}
	fmt.Fprintf(os.Stderr, "done handled=%d duplicates=%d retried=%d\n", st.Handled, st.Duplicates, st.Retried)
}

// reread marks in seen the IDs the file at path lists and returns how many
// distinct ones it does. A last line without its newline is cut off.
func reread(path string, seen []bool) (int, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if end := bytes.LastIndexByte(data, '\n') + 1; end < len(data) {
		if err := os.Truncate(path, int64(end)); err != nil {
			return 0, err
		}
		data = data[:end]
	}
	distinct := 0
	for l := range strings.Lines(string(data)) {
		id, err := strconv.Atoi(strings.TrimSuffix(l, "\n"))
		if err != nil || id < 0 || id >= len(seen) {
			return 0, fmt.Errorf("%s: bad line %q", path, l)
		}
		if !seen[id] {
			seen[id] = true
			distinct++
		}
	}
	return distinct, nil
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "fatal:", strings.TrimSpace(msg))
	os.Exit(1)
}
