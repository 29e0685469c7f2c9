//go:build browser

// The debug page in a real browser: make browser (and make check, and so
// CI) runs it, once and without the race detector, with -tags browser.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic"
)

// madeAt is how the page shows where a subscription was made.
var madeAt = regexp.MustCompile(`^[a-z_]+\.go:[0-9]+$`)

// lateName is the name of a subscription made after the page's first
// snapshot was served: markup in it must show as text.
const lateName = `late <b>"subscriber"</b> & <script>alert(1)</script>`

// TestDebugPageInBrowser serves the busy broker's page on a free loopback
// port, has headless Chromium load it and run its script for five seconds
// of virtual time (ten refreshes, one every 500ms), and reads the DOM it
// leaves: it must
// list the demo's subscriptions by name with their numbers, show that it
// refreshed (a count of updates of two or more, and a subscription made
// only after the first snapshot was served, its name as text), and the
// retained log. Then it saves a screenshot in dist/debug-page.png.
func TestDebugPageInBrowser(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed, and this test needs it: install Debian's package with " +
			"`apt-get install -y chromium` (as root, or with sudo); .ci/run installs it when missing")
	}
	start := time.Now()
	var b topic.Broker
	ctx, cancel := context.WithCancel(context.Background())
	done := busy(ctx, &b)
	defer func() {
		cancel()
		<-done
	}()
	waitBusy(t, &b)

	// After the first snapshot the page is sent, a subscription comes that
	// only a later snapshot can show.
	var once sync.Once
	cancelLate := make(chan func(), 1)
	mux := debugMux(&b)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/snapshot.json") {
			// A publication between any two snapshots, whatever the
			// busy broker's bursts, so that some rate is above zero.
			b.Publish(Heartbeat{Service: "browser test"})
		}
		mux.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/snapshot.json") {
			once.Do(func() {
				_, c := b.Subscribe(topic.Name[Revenue](lateName))
				cancelLate <- c
			})
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Close()
	page := "http://" + ln.Addr().String() + "/debug/topic/"
	waitIncidents(t, page+"snapshot.json")

	dom := chromium(t, bin, "--virtual-time-budget=5000", "--dump-dom", page+"?every=500ms")
	doc, err := parseHTML(dom)
	if err != nil {
		t.Fatalf("the DOM Chromium dumped does not parse: %v\n%s", err, dom)
	}
	checkDOM(t, doc, dom)

	// The screenshot shows the demo's own subscriptions only.
	select {
	case c := <-cancelLate:
		c()
	default:
	}
	dist, err := filepath.Abs(filepath.Join("..", "..", "dist"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dist, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dist, "debug-page.png")
	os.Remove(shot)
	chromium(t, bin, "--virtual-time-budget=3000", "--hide-scrollbars", "--window-size=1440,900", "--screenshot="+shot, page)
	if w, h, err := pngSize(shot); err != nil || w != 1440 || h != 900 {
		t.Errorf("the screenshot %s: %dx%d, %v; want a 1440x900 PNG", shot, w, h, err)
	}
	t.Logf("screenshot: %s; the test took %v", shot, time.Since(start).Round(time.Millisecond))
}

// waitBusy waits until the busy broker has every kind of number the page
// must show: a slow subscriber's losses, a handler's retries and dead
// letters, a follower's offset, a log's offsets.
func waitBusy(t *testing.T, b *topic.Broker) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ok := map[string]bool{}
		for _, st := range b.Subscriptions() {
			switch st.Name {
			case "slow monitor":
				ok[st.Name] = st.Lost.Full > 0
			case "fraud check":
				ok[st.Name] = st.Handler.Retried > 0 && st.Handler.DeadLettered > 0
			case "price follower":
				ok[st.Name] = st.Follower.Offset > 0
			}
		}
		logs := b.Logs()
		if ok["slow monitor"] && ok["fraud check"] && ok["price follower"] && len(logs) == 1 && logs[0].Next > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s the busy broker reads %+v, %+v", b.Subscriptions(), logs)
		}
	}
}

// waitIncidents waits until the page's snapshot has an incident: its
// handler's Watch reports one a second.
func waitIncidents(t *testing.T, url string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		var s struct{ Incidents []any }
		err = json.NewDecoder(r.Body).Decode(&s)
		r.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Incidents) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("after 30 s the page's snapshot has no incident")
		}
	}
}

// chromium runs headless Chromium on url with args, and returns what it
// printed on its standard output.
func chromium(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--mute-audio",
		"--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	began := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, errs.String())
	}
	t.Logf("chromium %s: %v", args[len(args)-2], time.Since(began).Round(time.Millisecond))
	return out.String()
}

// checkDOM checks the page Chromium rendered.
func checkDOM(t *testing.T, doc *node, dom string) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format, args...)
	}
	defer func() {
		if t.Failed() {
			t.Logf("the DOM:\n%s", dom)
		}
	}()
	if got := doc.byID("status").text(); got != "live" {
		fail("the status reads %q, want live", got)
	}
	if got := doc.byID("every").text(); got != "500ms" {
		fail("the page refreshes every %q, want 500ms as ?every asks", got)
	}
	if n := number(t, doc.byID("updates").text()); n < 2 {
		fail("the page counts %d updates, want 2 or more: it did not refresh", n)
	} else {
		t.Logf("the page refreshed %d times", n)
	}
	subs := doc.byID("subs")
	if subs == nil {
		t.Fatal("the page has no table of subscriptions")
	}
	rows := map[string]*node{}
	for _, tr := range subs.all("tr") {
		if name, ok := tr.attr["data-name"]; ok {
			rows[name] = tr
		}
	}
	for _, name := range []string{"accounting", "alerts", "audit", "dead letters", "emailer", "fraud check", "price follower", "price ticker", "slow monitor"} {
		tr := rows[name]
		if tr == nil {
			fail("the page lists no subscription %q (it lists %d rows)", name, len(rows))
			continue
		}
		if tr.field("capacity") == nil || number(t, tr.field("capacity").text()) == 0 {
			fail("%q shows no capacity", name)
		}
		// Where it was made: a line of the demo's code, with its package
		// (its import path, or main in a binary) on hover.
		if m := tr.field("made"); m == nil || !madeAt.MatchString(m.text()) || !strings.HasSuffix(m.attr["title"], "/"+m.text()) {
			got := "nothing"
			if m != nil {
				got = strconv.Quote(m.text()) + " (title " + strconv.Quote(m.attr["title"]) + ")"
			}
			fail("%q shows %s as where it was made; want file.go:line, titled package/file.go:line", name, got)
		}
	}
	// A handler that follows a log has no capacity or overflow policy: its
	// queue is the log, shown as its lag.
	if tr := rows["price archive"]; tr == nil {
		fail("the page lists no subscription %q", "price archive")
	} else if got := tr.all("td")[3].text(); tr.field("capacity") != nil || !strings.HasPrefix(got, "lag ") {
		fail("the price archive, a handler follower, shows %q as its queue; want its lag, with no capacity", got)
	}
	if tr := rows["slow monitor"]; tr != nil {
		if n := number(t, tr.field("lost.full").text()); n == 0 {
			fail("the slow monitor shows no values lost as full")
		}
		// What it lost reads as a share of what reached it, which grows.
		matched := number(t, tr.field("matched").text())
		if lost := number(t, tr.field("lost").text()); matched <= lost {
			fail("the slow monitor matched %d and lost %d: matched must count the losses and what it received", matched, lost)
		}
		if r := tr.field("loss-ratio"); r == nil || !lossShare.MatchString(r.text()) {
			fail("the slow monitor shows no share of its losses")
		}
		if r := tr.field("rate"); r == nil || rateOf(t, r.text()) < 0 {
			fail("the slow monitor shows no rate of values matched")
		}
	}
	// Who consumes what: each published type, its rate, the subscriptions
	// it reaches.
	topics := map[string]*node{}
	if table := doc.byID("topics"); table != nil {
		for _, tr := range table.all("tr") {
			if typ, ok := tr.attr["data-type"]; ok {
				topics[typ] = tr
			}
		}
	}
	moving := 0 // topics with a rate above zero
	for typ, names := range map[string][]string{
		"main.Heartbeat":   {"slow monitor"},
		"main.OrderPlaced": {"accounting", "audit", "fraud check"},
		"main.Price":       {"price ticker"},
	} {
		tr := topics[typ]
		if tr == nil {
			fail("the page lists no topic %s (it lists %d)", typ, len(topics))
			continue
		}
		if number(t, tr.field("published").text()) == 0 {
			fail("the topic %s shows nothing published", typ)
		}
		// Between two refreshes a type may publish nothing: a rate of 0.
		if r := rateOf(t, tr.field("rate").text()); r > 0 {
			moving++
		}
		reached := map[string]bool{}
		for _, r := range tr.all("span") {
			if n, ok := r.attr["data-reach"]; ok {
				reached[n] = true
			}
		}
		for _, n := range names {
			if !reached[n] {
				fail("the topic %s does not show that it reaches %q (it shows %v)", typ, n, reached)
			}
		}
	}
	if moving == 0 {
		fail("no topic shows a rate above zero: the rates are not computed")
	}
	// The last incidents: the slow monitor's, with the share lost.
	found := false
	if table := doc.byID("incidents"); table != nil {
		for _, tr := range table.all("tr") {
			if tr.attr["data-name"] == "slow monitor" && tr.field("loss-ratio") != nil && lossShare.MatchString(tr.field("loss-ratio").text()) {
				found = true
			}
		}
	}
	if !found {
		fail("the page shows no incident of the slow monitor with the share it lost")
	}
	if tr := rows["slow monitor"]; tr != nil {
		if got := tr.all("td")[0].text(); got != "main.Heartbeat" {
			fail("the slow monitor's type reads %q", got)
		}
	}
	if tr := rows["fraud check"]; tr != nil {
		for _, f := range []string{"accepted", "handled", "retried", "dead-lettered"} {
			if tr.field(f) == nil || number(t, tr.field(f).text()) == 0 {
				fail("the fraud check shows no %s count", f)
			}
		}
	}
	if tr := rows["price ticker"]; tr != nil && number(t, tr.field("lost.evicted").text()) == 0 {
		fail("the price ticker shows nothing evicted")
	}
	if tr := rows["price follower"]; tr != nil && (tr.field("offset") == nil || number(t, tr.field("offset").text()) == 0) {
		fail("the price follower shows no offset")
	}
	if tr := rows[lateName]; tr == nil {
		fail("the page does not list the subscription made after its first snapshot: it did not update live")
	} else {
		if got := tr.all("td")[1].text(); got != lateName {
			fail("the late subscription's name reads %q, want %q as text", got, lateName)
		}
		if len(tr.all("b")) > 0 || len(tr.all("script")) > 0 {
			fail("the late subscription's name was rendered as markup")
		}
	}
	var logs []*node
	if table := doc.byID("logs"); table != nil {
		logs = table.all("tr")
	}
	found = false
	for _, tr := range logs {
		if tr.attr["data-type"] == "main.Price" {
			found = true
			if tr.field("next") == nil || number(t, tr.field("next").text()) == 0 || number(t, tr.field("kept").text()) == 0 {
				fail("the log of main.Price shows no offsets")
			}
		}
	}
	if !found {
		fail("the page lists no log of main.Price")
	}
	var lost *node
	for _, c := range doc.all("div") {
		if c.attr["data-total"] == "lost" {
			lost = c
		}
	}
	if lost == nil || number(t, lost.field("value").text()) == 0 {
		fail("the page shows no total of losses")
	}
}

// lossShare is how the page prints a share of losses.
var lossShare = regexp.MustCompile(`^[0-9]+(\.[0-9])?%$`)

// rateOf parses a rate as the page prints it: a count, or one with a
// decimal.
func rateOf(t *testing.T, s string) float64 {
	t.Helper()
	r, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(s), ",", ""), 64)
	if err != nil {
		t.Errorf("%q is not a rate", s)
	}
	return r
}

// number parses a count as the page prints it, with thousands separated by
// commas.
func number(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.ReplaceAll(strings.TrimSpace(s), ",", ""))
	if err != nil {
		t.Errorf("%q is not a count", s)
	}
	return n
}

// node is an element of a parsed page.
type node struct {
	name string
	attr map[string]string
	kids []any // *node or string
}

// scriptOrStyle matches the elements whose content is not markup.
var scriptOrStyle = regexp.MustCompile(`(?is)<script\b[^>]*>.*?</script>|<style\b[^>]*>.*?</style>`)

// parseHTML parses the HTML Chromium dumps, less its scripts and styles, with
// encoding/xml in its lenient mode, which knows HTML's void elements and
// entities.
func parseHTML(s string) (*node, error) {
	d := xml.NewDecoder(strings.NewReader(scriptOrStyle.ReplaceAllString(s, "")))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	root := &node{name: "#document"}
	stack := []*node{root}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return root, nil
		}
		if err != nil {
			return nil, err
		}
		top := stack[len(stack)-1]
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &node{name: strings.ToLower(tok.Name.Local), attr: map[string]string{}}
			for _, a := range tok.Attr {
				n.attr[strings.ToLower(a.Name.Local)] = a.Value
			}
			top.kids = append(top.kids, n)
			stack = append(stack, n)
		case xml.EndElement:
			for i := len(stack) - 1; i > 0; i-- {
				if stack[i].name == strings.ToLower(tok.Name.Local) {
					stack = stack[:i]
					break
				}
			}
		case xml.CharData:
			top.kids = append(top.kids, string(tok))
		}
	}
}

// all returns the elements named name below n, in document order.
func (n *node) all(name string) []*node {
	var out []*node
	for _, k := range n.kids {
		if k, ok := k.(*node); ok {
			if k.name == name {
				out = append(out, k)
			}
			out = append(out, k.all(name)...)
		}
	}
	return out
}

// find returns the first element below n for which ok holds, or nil.
func (n *node) find(ok func(*node) bool) *node {
	for _, k := range n.kids {
		if k, isNode := k.(*node); isNode {
			if ok(k) {
				return k
			}
			if f := k.find(ok); f != nil {
				return f
			}
		}
	}
	return nil
}

func (n *node) byID(id string) *node { return n.find(func(k *node) bool { return k.attr["id"] == id }) }

// field returns the element below n whose data-field is f, or nil.
func (n *node) field(f string) *node {
	if n == nil {
		return nil
	}
	return n.find(func(k *node) bool { return k.attr["data-field"] == f })
}

// text returns the text below n; none for nil.
func (n *node) text() string {
	if n == nil {
		return ""
	}
	var sb strings.Builder
	for _, k := range n.kids {
		switch k := k.(type) {
		case string:
			sb.WriteString(k)
		case *node:
			sb.WriteString(k.text())
		}
	}
	return sb.String()
}

// pngSize returns the width and height of the PNG file at path.
func pngSize(path string) (w, h int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	c, err := png.DecodeConfig(f)
	return c.Width, c.Height, err
}
