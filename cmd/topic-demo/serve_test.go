package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic"
)

// serve prints the page's URL on a free port when given port 0, serves the
// page and its snapshot there, with / redirected to it, and once its
// context ends shuts the broker down, prints what it lost and stops
// serving.
func TestServePrintsTheURLAndEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, "127.0.0.1:0", pw)
		pw.Close()
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(pr); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	var page string
	for l := range lines {
		if m := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/debug/topic/`).FindString(l); m != "" {
			page = m
			break
		}
	}
	if page == "" || strings.HasSuffix(page, ":0/debug/topic/") {
		t.Fatalf("serve printed no URL with a port (%q)", page)
	}

	resp, err := http.Get(strings.TrimSuffix(page, "debug/topic/"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.String() != page || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET / ends at %s: %s %q, want the page at %s", resp.Request.URL, resp.Status, resp.Header.Get("Content-Type"), page)
	}
	resp, err = http.Get(page + "snapshot.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Subscriptions []struct{ Name string }
		Logs          []struct{ Type string }
	}
	err = json.NewDecoder(resp.Body).Decode(&s)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range s.Subscriptions {
		got = append(got, x.Name)
	}
	slices.Sort(got)
	want := []string{"accounting", "alerts", "audit", "dead letters", "emailer", "fraud check", "price archive", "price follower", "price ticker", "slow monitor"}
	if !slices.Equal(got, want) || len(s.Logs) != 1 || s.Logs[0].Type != "main.Price" {
		t.Errorf("the snapshot lists %q and logs %v, want %q and main.Price", got, s.Logs, want)
	}

	cancel()
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve has not returned 30 seconds after its context ended")
	}
	if len(rest) == 0 || !strings.HasPrefix(rest[len(rest)-1], "shut down: 10 subscriptions lost ") {
		t.Errorf("after its context ended serve printed %q", rest)
	}
	if _, err := http.Get(page); err == nil {
		t.Errorf("the page is still served after serve returned")
	}
}

// busy registers everything before it returns, and once its context ends
// it shuts the broker down and ends every goroutine it started.
func TestBusyEndsWithItsContext(t *testing.T) {
	var b topic.Broker
	ctx, cancel := context.WithCancel(context.Background())
	done := busy(ctx, &b)
	if n := len(b.Subscriptions()); n != 10 {
		t.Errorf("busy registered %d subscriptions, want 10", n)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("busy has not ended 30 seconds after its context ended")
	}
	select {
	case <-b.Done():
	default:
		t.Error("busy ended without shutting the broker down")
	}
}
