package topicdebug_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/topicdebug"
)

// serve runs one request through h and returns what it wrote.
func serve(h http.Handler, method, target string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

// snapshotOf decodes a snapshot.json response, failing t unless it is one.
func snapshotOf(t *testing.T, rec *httptest.ResponseRecorder) decoded {
	t.Helper()
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("snapshot.json: %d %q: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	return decode(t, rec.Body.String())
}

// names returns the names of d's subscriptions, in order.
func names(d decoded) []string {
	var out []string
	for _, s := range d.Subscriptions {
		out = append(out, s.Name)
	}
	return out
}

// The page is one HTML response with its script and style inline, served
// with a policy that lets only those run, and no header a browser would
// cache it by for long.
func TestHandlerServesThePage(t *testing.T) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	rec := serve(topicdebug.Handler(&b), "GET", "/")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("the page: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	page := rec.Body.String()
	for _, want := range []string{"<!DOCTYPE html>", "<style>", "<script>", `fetch("snapshot.json"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page has no %q", want)
		}
	}
	csp := rec.Header().Get("Content-Security-Policy")
	if strings.Count(csp, "'sha256-") != 2 || strings.Contains(csp, "unsafe") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("the page's Content-Security-Policy is %q, want default-src 'none' and the hashes of its script and style", csp)
	}
	if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q", got)
	}
}

// The page names every resource relative to its own URL (or as data), so
// that it works under any prefix; and it writes values as text, never as
// markup.
func TestThePageUsesRelativeURLsAndNoMarkupFromData(t *testing.T) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	page := serve(topicdebug.Handler(&b), "GET", "/").Body.String()
	if m := regexp.MustCompile(`[a-z]+://\S*`).FindAllString(page, -1); m != nil {
		t.Errorf("the page holds absolute URLs: %q", m)
	}
	abs := regexp.MustCompile(`(?:src|href|action)\s*=\s*"(?:/|[a-z][a-z0-9+.-]*:)[^"]*"|fetch\(\s*["'` + "`" + `](?:/|[a-z]+:)|url\(\s*["']?/`)
	for _, m := range abs.FindAllString(page, -1) {
		if m != `href="data:,"` { // the empty icon, which spares a request for /favicon.ico
			t.Errorf("the page refers to a resource by absolute path or scheme: %s", m)
		}
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page's script uses %s", bad)
		}
	}
}

// snapshot.json is the snapshot, the same JSON as the Var's, taken at each
// request, never cached.
func TestHandlerServesAFreshSnapshot(t *testing.T) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	h := topicdebug.Handler(&b)
	b.Subscribe(topic.Buffer[order](1), topic.Name[order]("billing"))
	b.Publish(order{1})
	b.Publish(order{2})
	rec := serve(h, "GET", "/snapshot.json")
	if got := rec.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", got)
	}
	if got, want := rec.Body.String(), topicdebug.Var(&b).String(); got != want {
		t.Errorf("snapshot.json is\n%s\nthe Var is\n%s", got, want)
	}
	d := snapshotOf(t, rec)
	if len(d.Subscriptions) != 1 || d.Subscriptions[0].Lost["full"] != 1 || d.Shutdown {
		t.Errorf("snapshot.json reads %+v", d)
	}
	b.Subscribe(topic.Name[order]("shipping"))
	b.Publish(order{3})
	d = snapshotOf(t, serve(h, "GET", "/snapshot.json"))
	if got := names(d); !slices.Equal(got, []string{"billing", "shipping"}) || d.Lost["full"] != 2 {
		t.Errorf("the second request reads %v, lost %v: want billing and shipping, full 2", got, d.Lost)
	}
}

// The handler works at any mount point, stripped or not: the page at the
// path ending in a slash, and snapshot.json resolved against the page's URL
// as a browser resolves it. A ServeMux redirects the bare path of its
// pattern to the page.
func TestHandlerWorksMountedAnywhere(t *testing.T) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	b.Subscribe(topic.Name[order]("billing"))
	h := topicdebug.Handler(&b)
	for _, tc := range []struct {
		name  string
		get   string // what a person types, redirected to page
		page  string
		mount func(*http.ServeMux)
	}{
		{"at the root", "/", "/", func(m *http.ServeMux) { m.Handle("/", h) }},
		{"under a prefix", "/debug/topic", "/debug/topic/", func(m *http.ServeMux) { m.Handle("/debug/topic/", h) }},
		{"stripped of the prefix and its slash", "/debug/topic", "/debug/topic/", func(m *http.ServeMux) {
			m.Handle("/debug/topic/", http.StripPrefix("/debug/topic/", h))
		}},
		{"stripped of the prefix", "/debug/topic", "/debug/topic/", func(m *http.ServeMux) {
			m.Handle("/debug/topic/", http.StripPrefix("/debug/topic", h))
		}},
		{"deep, stripped in part", "/a/b/c/", "/a/b/c/", func(m *http.ServeMux) { m.Handle("/a/", http.StripPrefix("/a/b", h)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			tc.mount(mux)
			srv := httptest.NewServer(mux)
			defer srv.Close()
			resp := get(t, srv.Client(), srv.URL+tc.get)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
				resp.Request.URL.Path != tc.page {
				t.Fatalf("GET %s: %s %q at %s, want the page at %s", tc.get, resp.Status, resp.Header.Get("Content-Type"), resp.Request.URL.Path, tc.page)
			}
			ref, _ := url.Parse("snapshot.json")
			js := resp.Request.URL.ResolveReference(ref)
			resp = get(t, srv.Client(), js.String())
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %s", js.Path, resp.Status)
			}
			if d := decode(t, string(body)); !slices.Equal(names(d), []string{"billing"}) {
				t.Errorf("GET %s reads %s", js.Path, body)
			}
		})
	}
}

// get gets u with c, failing t if it cannot; the body is read by the caller
// or dropped when the test ends.
func get(t *testing.T, c *http.Client, u string) *http.Response {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// Paths that end neither in a slash nor in snapshot.json are not found.
func TestHandlerUnknownPathsAreNotFound(t *testing.T) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	h := topicdebug.Handler(&b)
	for _, p := range []string{"/index.html", "/events", "/snapshot.jsonx", "/snapshot.json/x", "/debug/topic"} {
		if rec := serve(h, "GET", p); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, rec.Code)
		}
	}
}

// Only GET and HEAD are served; HEAD gets the headers of GET and no body.
func TestHandlerServesOnlyGetAndHead(t *testing.T) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	h := topicdebug.Handler(&b)
	for _, p := range []string{"/", "/snapshot.json", "/nowhere"} {
		for _, m := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "BREW"} {
			rec := serve(h, m, p)
			if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d, Allow %q; want 405, Allow GET, HEAD", m, p, rec.Code, rec.Header().Get("Allow"))
			}
		}
	}
	for p, ct := range map[string]string{"/": "text/html; charset=utf-8", "/snapshot.json": "application/json"} {
		rec := serve(h, "HEAD", p)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ct {
			t.Errorf("HEAD %s: %d %q, want 200 %q", p, rec.Code, rec.Header().Get("Content-Type"), ct)
		}
		if p == "/snapshot.json" && rec.Body.Len() != 0 {
			t.Errorf("HEAD %s wrote a body: %s", p, rec.Body)
		}
	}
}

// The handler keeps no state: mounted at two paths of one mux and on a
// second mux, and made twice for one broker, every mount serves every
// request its own snapshot, concurrently.
func TestHandlerMountedTwice(t *testing.T) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	h := topicdebug.Handler(&b)
	one, two := http.NewServeMux(), http.NewServeMux()
	one.Handle("/debug/topic/", h)
	one.Handle("/admin/broker/", http.StripPrefix("/admin/broker", h))
	two.Handle("/topic/", topicdebug.Handler(&b))
	srv1, srv2 := httptest.NewServer(one), httptest.NewServer(two)
	defer srv1.Close()
	defer srv2.Close()
	urls := []string{srv1.URL + "/debug/topic/snapshot.json", srv1.URL + "/admin/broker/snapshot.json", srv2.URL + "/topic/snapshot.json"}
	for round, want := range [][]string{{"a"}, {"a", "b"}} {
		b.Subscribe(topic.Name[order](want[len(want)-1]))
		var wg sync.WaitGroup
		for _, u := range urls {
			for range 4 {
				wg.Go(func() {
					resp, err := srv1.Client().Get(u)
					if err != nil {
						t.Error(err)
						return
					}
					defer resp.Body.Close()
					body, _ := io.ReadAll(resp.Body)
					var d decoded
					if err := json.Unmarshal(body, &d); err != nil || !slices.Equal(names(d), want) {
						t.Errorf("round %d, GET %s: %s (%v), want %v", round, u, body, err, want)
					}
				})
			}
		}
		wg.Wait()
	}
}

// After Shutdown the page is still served, and snapshot.json says the
// broker is shut down and shows the final counts, a value published since
// counted as Closed.
func TestHandlerAfterShutdown(t *testing.T) {
	var b topic.Broker
	h := topicdebug.Handler(&b)
	b.Subscribe(topic.Name[order]("billing"))
	b.Retain[int](topic.Retention{Count: 4})
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.Publish(order{1})
	d := snapshotOf(t, serve(h, "GET", "/snapshot.json"))
	if !d.Shutdown || !slices.Equal(names(d), []string{"billing"}) || d.Subscriptions[0].Lost["closed"] != 1 || d.Lost["closed"] != 1 {
		t.Errorf("after Shutdown snapshot.json reads %+v", d)
	}
	if rec := serve(h, "GET", "/"); rec.Code != http.StatusOK {
		t.Errorf("after Shutdown the page: %d", rec.Code)
	}
}

// While Shutdown drains a handler that holds a value, the page is served
// at once and says the broker is shut down.
func TestHandlerDuringTheDrain(t *testing.T) {
	var b topic.Broker
	entered, release := make(chan struct{}), make(chan struct{})
	b.Handle(func(context.Context, order) error {
		close(entered)
		<-release
		return nil
	}, topic.Name[order]("slow"))
	b.Publish(order{1})
	<-entered
	shut := make(chan error)
	go func() { shut <- b.Shutdown(context.Background()) }()
	<-b.Done()
	d := snapshotOf(t, serveWithin(t, topicdebug.Handler(&b), "/snapshot.json"))
	if !d.Shutdown || !slices.Equal(names(d), []string{"slow"}) {
		t.Errorf("during the drain snapshot.json reads %+v", d)
	}
	close(release)
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
}

// serveWithin serves a GET of target through h, failing t if it has not
// returned within ten seconds (it waits for nothing but the broker).
func serveWithin(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- serve(h, "GET", target) }()
	select {
	case rec := <-done:
		return rec
	case <-time.After(10 * time.Second):
		t.Fatalf("GET %s has not returned in ten seconds", target)
		return nil
	}
}

// A publisher held inside a From function, and a handler held inside its
// function, do not hold up the page.
func TestThePageDoesNotWaitForPublishers(t *testing.T) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	inFrom, inHandler, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	b.Subscribe(topic.From(func(o order) (int, bool) {
		close(inFrom)
		<-release
		return o.ID, true
	}), topic.Name[int]("stuck transform"))
	b.Handle(func(context.Context, string) error {
		close(inHandler)
		<-release
		return nil
	}, topic.Name[string]("stuck handler"))
	published := make(chan struct{})
	go func() {
		b.Publish(order{1})
		close(published)
	}()
	b.Publish("work")
	<-inFrom
	<-inHandler
	d := snapshotOf(t, serveWithin(t, topicdebug.Handler(&b), "/snapshot.json"))
	if got := names(d); !slices.Equal(got, []string{"stuck transform", "stuck handler"}) {
		t.Errorf("snapshot.json lists %v", got)
	}
	close(release)
	<-published
}

// A snapshot request whose client has gone gets nothing, and ends.
func TestHandlerDropsAGoneClient(t *testing.T) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	b.Subscribe(topic.Name[order]("billing"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	topicdebug.Handler(&b).ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", "/snapshot.json", nil))
	if rec.Body.Len() != 0 {
		t.Errorf("a gone client was sent %s", rec.Body)
	}
}

// Publishers go on while the page is served: a publisher, publishing in a
// loop, publishes during snapshots (Take alone, whose locks a publisher
// would wait for) and during snapshot requests, of a broker big enough
// that each takes milliseconds. A snapshot that held a lock publishers take
// would let at most the publication in flight finish during it; this asks
// for a hundred during one of them at least (hundreds of thousands are
// typical), so that a busy machine that lets the publisher run only now
// and then does not fail it.
func TestPublishersRunWhileThePageIsServed(t *testing.T) {
	n, requests := 3000, 8
	if testing.Short() {
		n, requests = 1000, 4
	}
	var b topic.Broker
	defer b.Shutdown(context.Background())
	for i := range n {
		b.Subscribe(topic.Name[order](fmt.Sprint("client-", i)))
	}
	b.Retain[int](topic.Retention{Count: 1000})
	b.Subscribe(topic.Follow[int](), topic.Name[int]("follower"))
	b.Handle(func(context.Context, string) error { return nil }, topic.Name[string]("handler"))
	b.Subscribe(topic.Buffer[string](1), topic.Name[string]("saturated")) // never received from

	var published atomic.Uint64
	started, stop, stopped := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			if i == 1 {
				close(started)
			}
			select {
			case <-stop:
				return
			default:
			}
			b.Publish(i)       // retained, followed
			b.Publish("value") // a handler and a saturated subscription
			published.Add(1)
		}
	}()
	defer func() { close(stop); <-stopped }()
	<-started

	h := topicdebug.Handler(&b)
	var takes, served []uint64
	for range requests {
		before := published.Load()
		s := topicdebug.Take(&b)
		takes = append(takes, published.Load()-before)
		if len(s.Subscriptions) != n+3 {
			t.Fatalf("Take holds %d subscriptions, want %d", len(s.Subscriptions), n+3)
		}
		before = published.Load()
		rec := serve(h, "GET", "/snapshot.json")
		served = append(served, published.Load()-before)
		if rec.Code != http.StatusOK {
			t.Fatalf("snapshot.json: %d", rec.Code)
		}
	}
	if slices.Max(takes) < 100 {
		t.Errorf("publications during each of %d snapshots: %v; want 100 or more during one at least", requests, takes)
	}
	if slices.Max(served) < 100 {
		t.Errorf("publications during each of %d snapshot requests: %v; want 100 or more during one at least", requests, served)
	}
	t.Logf("publications during each snapshot: %v", takes)
	t.Logf("publications during each snapshot request: %v", served)
}

// The snapshot a Handler serves has the broker's last incidents, newest
// first, each with what reached its subscription in its interval: the last
// 50 of them.
func TestHandlerKeepsTheLastIncidents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		h := topicdebug.Handler(&b) // its Watch ends with Shutdown, below
		defer b.Shutdown(context.Background())
		_, cancel := b.Subscribe(topic.Name[int]("slow"), topic.Buffer[int](1))
		defer cancel()
		get := func() topicdebug.Snapshot {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/snapshot.json", nil))
			var s struct {
				Incidents []struct {
					At      time.Time  `json:"at"`
					Name    string     `json:"name"`
					Lost    topic.Lost `json:"lost"`
					Matched uint64     `json:"matched"`
				} `json:"incidents"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
				t.Fatal(err)
			}
			var out topicdebug.Snapshot
			for _, i := range s.Incidents {
				out.Incidents = append(out.Incidents, topicdebug.Incident{At: i.At,
					Incident: topic.Incident{Name: i.Name, Lost: i.Lost, Matched: i.Matched}})
			}
			return out
		}
		if s := get(); len(s.Incidents) != 0 {
			t.Fatalf("incidents before any loss: %+v", s.Incidents)
		}
		for i := range 60 {
			for j := range i + 2 {
				b.Publish(j) // all lost but the very first: nobody receives
			}
			time.Sleep(time.Second)
			synctest.Wait()
		}
		s := get()
		if len(s.Incidents) != 50 {
			t.Fatalf("%d incidents kept, want the last 50", len(s.Incidents))
		}
		for k, i := range s.Incidents {
			n := uint64(61 - k) // newest first: the last interval published 61
			if i.Name != "slow" || i.Lost.Full != n || i.Matched != n {
				t.Errorf("incident %d: %s lost %d of %d, want %d of %d", k, i.Name, i.Lost.Full, i.Matched, n, n)
			}
			if k > 0 && !i.At.Before(s.Incidents[k-1].At) {
				t.Errorf("incident %d at %v, not before the one after it at %v", k, i.At, s.Incidents[k-1].At)
			}
		}
	})
}
