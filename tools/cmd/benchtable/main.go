// Command benchtable turns the output of the package's benchmarks into the
// Markdown tables of the README: the median of each figure and its ratio to
// the baseline it is read against.
//
// Its input is several rounds of the whole suite, each run once
// (-test.count=1), as `make table` produces: each ratio is then the median of
// the ratios within each round, so that a machine which drifts between rounds
// moves a figure and its baseline alike. Times and custom metrics are
// formatted by benchread's one rule: three significant digits, 48.9 µs.
//
//	benchtable [-doc file -readme file -go version -commit rev -date day -cores n -command text] [file...]
//
// It reads standard input when no file is named. `make table` runs it, from
// tools/, on dist/bench-rounds.txt, and prints the tables. With -doc it
// writes the whole benchmarks document there instead, stamped with the
// flags' machine, version, commit, date and command, and with -readme it
// rewrites the summary block of that README: `make benchdoc` does both.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/seedaa7df82c/topic/tools/internal/benchread"
)

// A row is one line of a table: a benchmark, and optionally the baseline
// its time is divided by (times mult) and how that baseline is named. unit
// is the time's unit, ns/op unless set.
type row struct {
	label, bench string
	base         string
	mult         float64
	baseLabel    string
	unit         string
}

// A section is one table of the README.
type section struct {
	title string
	rows  []row
}

const (
	raw      = "RawSend"
	full     = "RawSendFull"
	fullPar  = "RawSendFullParallel"
	rawLabel = "raw send"
)

func sections() []section {
	core := section{title: "Core paths", rows: []row{
		{label: "raw send and receive, one buffered channel (**baseline**)", bench: raw},
		{label: "raw send on a full channel (**baseline**)", bench: full},
		{label: "raw send on a full channel, GOMAXPROCS goroutines (**baseline**)", bench: fullPar},
		{label: "raw sends and receives, ten channels (**baseline**)", bench: "RawSend10"},
		{label: "the guard alone (enter and exit)", bench: "Guard", base: raw, baseLabel: rawLabel},
		{label: "no subscriber", bench: "PublishNoSubscriber", base: raw, baseLabel: rawLabel},
		{label: "unmatched topic", bench: "PublishUnmatched", base: raw, baseLabel: rawLabel},
		{label: "routing only (saturated subscriber, drop counted)", bench: "PublishSaturated", base: full, baseLabel: "raw full send"},
		{label: "direct delivery, identical type", bench: "PublishDirect", base: raw, baseLabel: rawLabel},
		{label: "pointer to interface subscription", bench: "PublishPointerToInterface", base: raw, baseLabel: rawLabel},
		{label: "interface value to interface subscription", bench: "PublishInterfaceToInterface", base: raw, baseLabel: rawLabel},
		{label: "directly matched transformation", bench: "PublishTransform", base: raw, baseLabel: rawLabel},
		{label: "directly matched filter (rejecting)", bench: "PublishFilterRejecting", base: raw, baseLabel: rawLabel},
		{label: "small non-pointer value to an any subscription", bench: "PublishSmallToAny", base: raw, baseLabel: rawLabel},
		{label: "non-pointer value to an any subscription", bench: "PublishValueToAny", base: raw, baseLabel: rawLabel},
		{label: "saturated publication from GOMAXPROCS goroutines", bench: "PublishSaturatedParallel", base: fullPar, baseLabel: "raw full send, parallel"},
		{label: "GOMAXPROCS publishers, one type, drained", bench: "PublishParallelOneType", base: raw, baseLabel: rawLabel},
		{label: "GOMAXPROCS publishers, a type each, drained", bench: "PublishParallelDistinctTypes", base: raw, baseLabel: rawLabel},
	}}
	for _, n := range []int{1, 10, 100, 1000} {
		r := row{label: fmt.Sprintf("fan-out to %d", n), bench: fmt.Sprintf("PublishFanout/n=%d", n),
			base: raw, mult: float64(n), baseLabel: fmt.Sprintf("%d raw sends", n)}
		switch n {
		case 1:
			r.baseLabel = rawLabel
		case 10:
			r.base, r.mult, r.baseLabel = "RawSend10", 1, "ten raw sends"
		}
		core.rows = append(core.rows, r)
	}
	sweep := func(format, bench string, ns []int) {
		for _, n := range ns {
			core.rows = append(core.rows, row{label: fmt.Sprintf(format, n),
				bench: fmt.Sprintf("%s/n=%d", bench, n), base: fmt.Sprintf("%s/n=%d", bench, ns[0]),
				baseLabel: fmt.Sprintf("n=%d", ns[0])})
		}
	}
	sweep("publish to the last of %d subscribed types", "PublishTypes", []int{1, 10, 100, 1000})
	sweep("subscribe + cancel, %d subscriptions held", "SubscribeCancel", []int{10, 100, 1000, 10000})
	sweep("subscribe + cancel, %d subscriptions of the same type held", "SubscribeCancelSameType", []int{10, 100, 1000, 10000})
	sweep("concrete publication beside %d non-matching interface subscriptions", "PublishInterfaceSubscriptions", []int{0, 1, 10, 100})

	return []section{core,
		{title: "Delivery and loss", rows: []row{
			{label: "full subscription, the drop counted", bench: "PublishSaturated", base: full, baseLabel: "raw full send"},
			{label: "the same from GOMAXPROCS goroutines", bench: "PublishSaturatedParallel", base: fullPar, baseLabel: "raw full send, parallel"},
			{label: "full drop-oldest subscription: evict, count, queue", bench: "PublishDropOldest", base: raw, baseLabel: rawLabel},
			{label: "full subscription with an OnLoss function", bench: "PublishOnLoss", base: full, baseLabel: "raw full send"},
			{label: "`Subscriptions()` with 10,000 subscriptions over 100 types", bench: "Subscriptions"},
		}},
		{title: "Handlers", rows: []row{
			{label: "a goroutine ranging over a channel subscription (**baseline**)", bench: "HandlerBaseline"},
			{label: "at-most-once handler", bench: "Handler", base: "HandlerBaseline", baseLabel: "baseline"},
			{label: "at-least-once handler, calls succeed", bench: "HandlerAtLeastOnce", base: "HandlerBaseline", baseLabel: "baseline"},
			{label: "wake an idle handler with one value, until its function has it", bench: "WakeHandler/mode=handler", base: "RawWake/n=1", baseLabel: "raw wake-up"},
			{label: "the same, a handler following the log (`Handle` with `Follow`)", bench: "WakeHandler/mode=handler-follower", base: "RawWake/n=1", baseLabel: "raw wake-up"},
		}},
		{title: "Retained types", rows: []row{
			{label: "publish to a retained type, one drained subscription", bench: "PublishRetained", base: "PublishDirect", baseLabel: "direct delivery"},
			{label: "the same from GOMAXPROCS goroutines", bench: "PublishRetainedParallel", base: "PublishParallelOneType", baseLabel: "parallel, not retained"},
		}},
		followers(),
		lossless(losslessTitle, "ns/value"),
	}
}

// The titles of BenchmarkLossless's tables: its time per value, and the
// CPU time per value of runs that report it (see write).
const (
	losslessTitle    = "Lossless delivery"
	losslessCPUTitle = "Lossless delivery: CPU per value"
)

// lossless is a table of BenchmarkLossless: each mode's figure per value
// delivered in unit (ns/value, its time; cpu-ns/value, the CPU time of the
// process) against the buffered channel per consumer at the same n.
func lossless(title, unit string) section {
	s := section{title: title}
	modes := []struct{ mode, label string }{
		{"channel", "a buffered channel per consumer, the publisher blocking (**baseline**)"},
		{"channel-follower", "a channel follower per consumer (`Subscribe` with `Follow`)"},
		{"batch-follower", "a follower per consumer reading batches of 64 (`Follow`, `Read`)"},
		{"handler", "a handler per consumer (`Handle`)"},
		{"handler-follower", "a handler following the log per consumer (`Handle` with `Follow`)"},
	}
	for _, n := range []int{1, 10, 100} {
		base := fmt.Sprintf("Lossless/mode=channel/n=%d", n)
		for _, m := range modes {
			r := row{label: fmt.Sprintf("%s, %s", plural(n, "consumer"), m.label),
				bench: fmt.Sprintf("Lossless/mode=%s/n=%d", m.mode, n), unit: unit}
			if m.mode != "channel" {
				r.base, r.baseLabel = base, "channel"
			}
			s.rows = append(s.rows, r)
		}
	}
	return s
}

// plural returns n and noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func followers() section {
	s := section{title: "Followers", rows: []row{
		{label: "one reading of the monotonic clock (**floor** of a timed log)", bench: "ClockReading"},
		{label: "publish to a retained type, one follower reading each value", bench: "PublishRetainedFollowed", base: "PublishDirect", baseLabel: "direct delivery"},
		{label: "the same, Retention.NoTime", bench: "PublishRetainedFollowedNoTime", base: "PublishDirect", baseLabel: "direct delivery"},
		{label: "GOMAXPROCS publishers, one follower on its goroutine", bench: "PublishRetainedFollowedParallel", base: "PublishParallelOneType", baseLabel: "parallel, not retained"},
		{label: "follower Read, batches of 64, per value", bench: "FollowerRead/batch=64", unit: "ns/value", base: raw, baseLabel: rawLabel},
		{label: "follower Read, one at a time, per value", bench: "FollowerRead/batch=1", unit: "ns/value", base: raw, baseLabel: rawLabel},
		{label: "follower Read of a latest-per-key log, batches of 64, per value", bench: "FollowerReadKeyed/batch=64", unit: "ns/value", base: raw, baseLabel: rawLabel},
		{label: "follower Read of a latest-per-key log, one at a time, per value", bench: "FollowerReadKeyed/batch=1", unit: "ns/value", base: raw, baseLabel: rawLabel},
		{label: "`Broker.Read`, up to 64 records a call, per value", bench: "Read/max=64", unit: "ns/value", base: raw, baseLabel: rawLabel},
		{label: "`Broker.Read`, one record a call, per value", bench: "Read/max=1", unit: "ns/value", base: raw, baseLabel: rawLabel},
		{label: "a handler following the log", bench: "HandlerFollower", base: "HandlerBaseline", baseLabel: "handler baseline"},
	}}
	for _, n := range []int{1, 100, 10000} {
		s.rows = append(s.rows, row{label: fmt.Sprintf("publish, %s not waiting", plural(n, "follower")),
			bench: fmt.Sprintf("PublishFollowers/n=%d", n), base: "PublishFollowers/n=1", baseLabel: "n=1"})
	}
	for _, n := range []int{1, 10, 100} {
		s.rows = append(s.rows, row{label: fmt.Sprintf("wake %s parked in Next, per follower", plural(n, "follower")),
			bench: fmt.Sprintf("PublishWakeFollowers/n=%d", n), unit: "ns/follower",
			base: fmt.Sprintf("RawWake/n=%d", n), baseLabel: "raw wake-up"})
	}
	return s
}

// ratio is the median over rounds of a/(b*mult), pairing the rounds in order.
func ratio(a, b []float64, mult float64) float64 {
	var rs []float64
	for i := range min(len(a), len(b)) {
		rs = append(rs, a[i]/(b[i]*mult))
	}
	m, _ := benchread.Median(rs)
	return m
}

// values returns the values of unit of the benchmark named bench, or nil.
func values(rs *benchread.Set, bench, unit string) []float64 {
	if r := rs.Find(bench); r != nil {
		return r.Values[unit]
	}
	return nil
}

// median returns the median of xs formatted by format, or "?" if xs is
// empty.
func median(xs []float64, format func(float64) string) string {
	m, ok := benchread.Median(xs)
	if !ok {
		return "?"
	}
	return format(m)
}

// rowLine is the table line of row r, read from res.
func rowLine(res *benchread.Set, r row) string {
	m := res.Find(r.bench)
	if m == nil {
		return fmt.Sprintf("| %s | not measured | | |", r.label)
	}
	unit, baseUnit := "ns/op", "ns/op"
	if r.unit != "" {
		unit = r.unit
		if values(res, r.base, unit) != nil {
			baseUnit = unit
		}
	}
	ratioText := ""
	if b := res.Find(r.base); b != nil {
		mult := r.mult
		if mult == 0 {
			mult = 1
		}
		ratioText = fmt.Sprintf("%.2f× %s", ratio(m.Values[unit], b.Values[baseUnit], mult), r.baseLabel)
	}
	allocs := median(m.Values["allocs/op"], func(x float64) string { return fmt.Sprintf("%.0f", x) })
	return fmt.Sprintf("| %s | %s | %s | %s |", r.label, median(m.Values[unit], benchread.Duration), ratioText, allocs)
}

// write writes every table of res, each under a heading of the given
// level ("####" for make table, "##" for the document) and, if notes has
// one for its title, the note that says what it measures.
func write(w io.Writer, res *benchread.Set, heading string, notes map[string]string) {
	title := func(t string) {
		fmt.Fprintf(w, "%s %s\n\n", heading, t)
		if n, ok := notes[t]; ok {
			fmt.Fprintf(w, "%s\n\n", n)
		}
	}
	ss := sections()
	// The CPU time per value, after the time per value, from a run on a
	// system that tells it (BenchmarkLossless reports it on unix).
	if values(res, "Lossless/mode=channel/n=1", "cpu-ns/value") != nil {
		ss = append(ss, lossless(losslessCPUTitle, "cpu-ns/value"))
	}
	for _, s := range ss {
		title(s.title)
		fmt.Fprintf(w, "| path | time | ratio | allocs/op |\n|---|---:|---|---:|\n")
		for _, r := range s.rows {
			fmt.Fprintln(w, rowLine(res, r))
		}
		fmt.Fprintln(w)
	}
	// Figures reported as custom metrics.
	metrics := []struct{ bench, unit, label string }{
		{"SubscriptionMemory", "B/sub", "heap per capacity-one subscription of a 32-byte type, 10,000 held, broker share included"},
		{"HandlerMemory", "B/handler", "memory per idle handler, 10,000 held, goroutine stack included"},
		{"HandlerMemory", "heap-B/handler", "of which heap"},
		{"HandlerMemory", "stack-B/handler", "of which goroutine stack"},
		{"Replay", "ns/value", "replay of 10,000 retained values to a new subscription, per value"},
		{"RetainedMemory", "B/value", "heap per retained value of a 16-byte type, 100,000 kept"},
		{"FollowerReplay", "ns/value", "a new follower reading 10,000 retained values from the earliest, per value"},
		{"FollowerMemory", "B/follower", "heap per idle follower, 10,000 held"},
	}
	title("Memory and replay")
	fmt.Fprintf(w, "| figure | median |\n|---|---:|\n")
	for _, x := range metrics {
		if v := values(res, x.bench, x.unit); v != nil {
			fmt.Fprintf(w, "| %s | %s |\n", x.label, median(v, func(m float64) string { return benchread.Format(m, x.unit) }))
		}
	}
	if res.Find(latencyName(latencyCases[0].rate, latencyCases[0].n)) != nil {
		title("Latency below saturation")
		latency(w, res)
	}
	rounds := len(values(res, raw, "ns/op"))
	fmt.Fprintf(w, "\nMedians of %d rounds; ratios are medians of the ratios within each round.\n", rounds)
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("benchtable: ")
	doc := flag.String("doc", "", "write the benchmarks document to this file")
	readme := flag.String("readme", "", "rewrite the summary block of this README")
	var st stamp
	flag.StringVar(&st.goVersion, "go", "", "the Go version of the run")
	flag.StringVar(&st.commit, "commit", "", "the commit measured")
	flag.StringVar(&st.date, "date", "", "the day of the run")
	flag.IntVar(&st.cores, "cores", 0, "the machine's cores")
	flag.StringVar(&st.command, "command", "make benchdoc", "the command that made the run")
	flag.Parse()
	var res *benchread.Set
	var err error
	if flag.NArg() == 0 {
		res = new(benchread.Set)
		_, err = res.Read(os.Stdin, "stdin")
	} else {
		res, err = benchread.ReadFiles(flag.Args()...)
	}
	if err != nil {
		log.Fatal(err)
	}
	if len(res.List) == 0 {
		log.Fatal("no benchmark results in the input")
	}
	if *doc == "" && *readme == "" {
		write(os.Stdout, res, "####", nil)
		return
	}
	if st.goVersion == "" || st.commit == "" || st.date == "" || st.cores == 0 {
		log.Fatal("-doc and -readme need -go, -commit, -date and -cores: a figure says where it was measured")
	}
	if *doc != "" {
		var b bytes.Buffer
		writeDoc(&b, res, st)
		if err := os.WriteFile(*doc, b.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if *readme != "" {
		var b bytes.Buffer
		writeSummary(&b, res, st)
		if err := replaceBlock(*readme, b.Bytes()); err != nil {
			log.Fatal(err)
		}
	}
}

// latencyCases are the offered rates and consumers of BenchmarkLatency's
// table, in its order.
var latencyCases = []struct {
	rate, label string
	n           int
}{
	{"10k", "10,000/s", 1}, {"100k", "100,000/s", 1}, {"100k", "100,000/s", 10}, {"1000k", "1,000,000/s", 1},
}

// latencyModes are the modes of BenchmarkLatency, the baseline first: each
// run of it reports every mode's figures, as <mode>-p99-ns and the like.
var latencyModes = []struct{ mode, label string }{
	{"channel", "a buffered channel per consumer (**baseline**)"},
	{"subscribe", "`Subscribe`, lossy"},
	{"channel-follower", "a channel follower (`Subscribe` with `Follow`)"},
	{"batch-follower", "a follower reading batches of 64 (`Follow`, `Read`)"},
	{"handler", "a handler (`Handle`)"},
	{"handler-follower", "a handler following the log (`Handle` with `Follow`)"},
}

func latencyName(rate string, n int) string {
	return fmt.Sprintf("Latency/rate=%s/n=%d", rate, n)
}

// latency writes the table of BenchmarkLatency: for each offered rate and
// number of consumers, each mode's p50, p99 and p99.9 of the time from a
// Publish to a consumer's receipt (medians of the rounds), and its p99 as
// a ratio to the plain channel's of the same run.
func latency(w io.Writer, res *benchread.Set) {
	fmt.Fprintf(w, "| offered rate | consumers | path | p50 | p99 | p99.9 | p99 ratio |\n|---|---:|---|---:|---:|---:|---|\n")
	for _, c := range latencyCases {
		r := res.Find(latencyName(c.rate, c.n))
		if r == nil {
			continue
		}
		base := r.Values["channel-p99-ns"]
		for _, m := range latencyModes {
			p99 := r.Values[m.mode+"-p99-ns"]
			if p99 == nil {
				continue
			}
			ratioText := ""
			if base != nil && m.mode != "channel" {
				ratioText = fmt.Sprintf("%.2f× channel", ratio(p99, base, 1))
			}
			fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s |\n", c.label, c.n, m.label,
				median(r.Values[m.mode+"-p50-ns"], benchread.Duration), median(p99, benchread.Duration),
				median(r.Values[m.mode+"-p99.9-ns"], benchread.Duration), ratioText)
		}
	}
	stalls(w, res)
}

// stalls writes what BenchmarkMachineStalls measured in the same rounds,
// the machine's own stalls of a running goroutine, by which to read the
// tails of the latency table: the longest, how often, and the share of the
// time (medians of the rounds).
func stalls(w io.Writer, res *benchread.Set) {
	r := res.Find("MachineStalls")
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\nThe machine itself, in the same rounds (`BenchmarkMachineStalls`: a goroutine on each "+
		"processor reading the clock, nothing of the broker's running), stopped a running goroutine "+
		"for more than 100 µs %s times a second, %s of the time, the longest stall %s. A stall of d "+
		"delays the values published during it by up to d, whatever the mode.\n",
		median(r.Values["stalls/s"], benchread.Number), median(r.Values["stalled-%"], func(x float64) string { return benchread.Number(x) + " %" }),
		median(r.Values["max-stall-ns"], benchread.Duration))
}
