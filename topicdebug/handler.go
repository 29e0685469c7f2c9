package topicdebug

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/seedaa7df82c/topic"
)

// Handler returns an http.Handler that shows b as a page a person reads at
// a glance: every subscription and handler with its type, name, queue
// (queued of capacity, as a bar), losses by cause, a handler's counts
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
// Requests are independent: the handler keeps no state, so it may be
// mounted at several paths or on several muxes at once, and every request
// takes its own snapshot. A snapshot request whose client has gone (its
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
	return pageHandler{b}
}

// pageHandler is what Handler returns; b never changes.
type pageHandler struct{ b *topic.Broker }

func (h pageHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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

func (h pageHandler) servePage(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Security-Policy", pageCSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	w.Write([]byte(pageHTML))
}

func (h pageHandler) serveSnapshot(w http.ResponseWriter, r *http.Request) {
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
