package topicdebug

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/seedaa7df82c/topic"
)

// Handler returns an http.Handler that shows b as a page a person reads at
// a glance: every type published, with its count and rate, and the
// subscriptions it reaches; every subscription and handler with its type,
// name, queue (queued of capacity, as a bar), what reached it and at what
// rate, losses by cause and as a share of that, a handler's counts
// (accepted, handled, retried, dead-lettered), a follower's offset,
// committed offset and lag, every retained type's log (oldest and next
// offsets, values kept, its bound), the losses of all of them by cause,
// and whether Shutdown has been called. It panics if b is nil.
//
// It serves two resources, chosen by the last element of the request's
// path, so that it works mounted at any path, with or without
// http.StripPrefix:
//
//   - a path ending in "/" (or empty): the page, HTML, CSS and script in one
//     response, with nothing loaded from elsewhere;
//   - a path ending in "snapshot.json": the snapshot (Take) as JSON, the
//     same as Var's, taken at each request.
//
// Any other path is not found (404). Mount it on a pattern ending in a
// slash, whose bare form http.ServeMux then redirects to it:
//
//	mux := http.NewServeMux()
//	mux.Handle("/debug/topic/", topicdebug.Handler(&b))
//
// The page refers to snapshot.json relative to its own URL, and polls it
// every second; "?every=250ms" on the page's URL sets the period, from
// 100ms to a minute. Polling, rather than a stream of server-sent events, keeps nothing open
// between two refreshes: an open page costs one snapshot per period and no
// goroutine, a closed or unreachable one costs nothing, and each refresh
// is a plain request any proxy passes. After Shutdown the page says so and
// goes on showing the counts, which may still move (see Snapshot).
//
// The page shows the broker's last incidents too, those of a Watch (one
// interval a second) that Handler starts: the last 50, each lost value
// with the share of what reached the subscription in its interval. That
// Watch runs until Shutdown has ended it. Otherwise the handler keeps no
// state: it may be mounted at several paths or on several muxes at once,
// and every request takes its own snapshot. A snapshot request whose client has gone (its
// context is done) gets nothing, and a HEAD request the headers only.
// Methods other than GET and HEAD get 405 Method Not Allowed.
//
// Type and subscription names are the program's data: the page writes them
// as text, never as markup, and its Content-Security-Policy allows only
// its own script and style to run.
func Handler(b *topic.Broker) http.Handler {
	if b == nil {
		panic("topicdebug: Handler of a nil broker")
	}
	h := &pageHandler{b: b}
	//topicvet:ignore topiccancel -- the page watches the broker as long as it lives: Watch ends by itself after Shutdown
	b.Watch(time.Second, h.keep)
	return h
}

// tailSize is how many incidents a Handler keeps.
const tailSize = 50

// pageHandler is what Handler returns; b never changes.
type pageHandler struct {
	b    *topic.Broker
	mu   sync.Mutex
	tail []Incident // the last incidents, oldest first; guarded by mu
}

// keep keeps i, the Watch's, among the last incidents.
func (h *pageHandler) keep(i topic.Incident) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.tail) == tailSize {
		h.tail = append(h.tail[:0], h.tail[1:]...)
	}
	h.tail = append(h.tail, Incident{At: time.Now().UTC().Truncate(time.Millisecond), Incident: i})
}

// incidents returns the last incidents, newest first.
func (h *pageHandler) incidents() []Incident {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Incident, len(h.tail))
	for i, x := range h.tail {
		out[len(out)-1-i] = x
	}
	return out
}

func (h *pageHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "topicdebug: only GET and HEAD", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	switch {
	case p == "" || strings.HasSuffix(p, "/"):
		h.servePage(w)
	case p == "snapshot.json" || strings.HasSuffix(p, "/snapshot.json"):
		h.serveSnapshot(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (h *pageHandler) servePage(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Security-Policy", pageCSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	w.Write([]byte(pageHTML))
}

func (h *pageHandler) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	// Neither a HEAD nor a gone client needs the snapshot: spare taking
	// it, and encoding it, which cost milliseconds on a big broker.
	if r.Method == http.MethodHead || r.Context().Err() != nil {
		return
	}
	s := Take(h.b)
	s.Incidents = h.incidents()
	if r.Context().Err() != nil {
		return
	}
	body, err := json.Marshal(s)
	if err != nil { // the core's MarshalJSON methods do not fail
		http.Error(w, "topicdebug: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(body)
}

// pageHTML is the page: one file, its style and script inline.
//
//go:embed page.html
var pageHTML string

// pageCSP lets the page run its own inline script and style, by their
// hashes, fetch from its own origin, and nothing else: no other script, no
// inline event handler, no plug-in, no frame around it.
var pageCSP = "default-src 'none'; script-src " + inlineHash("script") +
	"; style-src " + inlineHash("style") +
	"; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// inlineHash returns the CSP source of the content of the page's one
// element named tag, as 'sha256-…'.
func inlineHash(tag string) string {
	_, after, ok := strings.Cut(pageHTML, "<"+tag+">")
	content, _, ok2 := strings.Cut(after, "</"+tag+">")
	if !ok || !ok2 {
		panic("topicdebug: page.html has no <" + tag + "> element")
	}
	sum := sha256.Sum256([]byte(content))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}
