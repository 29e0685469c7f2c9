package main

import (
	"fmt"
	"io"

	"github.com/seedaa7df82c/topic/tools/internal/benchread"
	"github.com/seedaa7df82c/topic/tools/internal/docblock"
)

// A stamp says where and when a run was made, and how to make it again.
type stamp struct {
	goVersion, commit, date, command string
	cores                            int
}

// line is the stamp as one sentence, with the CPU the run reported.
func (s stamp) line(res *benchread.Set) string {
	cpu := res.CPU
	if cpu == "" {
		cpu = "an unnamed CPU"
	}
	return fmt.Sprintf("Measured on %s (%d cores), %s, at commit %s on %s, by `%s`.",
		cpu, s.cores, s.goVersion, s.commit, s.date, s.command)
}

// notes are what each section of the document measures, said once above
// its table.
var notes = map[string]string{
	"Core paths": "A publication's cost by route: nothing subscribed, a type nobody subscribes to, " +
		"a full subscription (the drop counted), one plain subscription, an interface or `any` " +
		"subscription, a `From` transformation or filter, publishers on every core, fan-out, " +
		"and how the cost holds as types, subscriptions and wildcards grow.",
	"Delivery and loss": "What a loss costs: a drop counted on a full buffer, an eviction under " +
		"`Overflow(DropOldest)`, an `OnLoss` function called, and a snapshot of 10,000 subscriptions.",
	"Handlers": "A handler against the goroutine a user would write by hand, ranging over a " +
		"channel subscription and calling the same function; and the wake-up of an idle " +
		"handler, one value at a time, against a goroutine woken from a channel receive.",
	"Retained types": "A publication of a retained type (an offset and a time at the type's " +
		"sequencing point, the value kept in the log) against one of a plain type.",
	"Lossless delivery": "One publisher, n consumers that each take every value " +
		"(`BenchmarkLossless`): the time per value delivered, against a buffered channel of 1,024 " +
		"per consumer whose publisher blocks when one is full, the floor of a lossless design. " +
		"A topic publisher never blocks, so the benchmark's publisher sleeps while the slowest " +
		"consumer is 1,024 values behind; the run fails if any value is lost, Skipped included. " +
		"A channel follower hands each value through three goroutines, the publisher, its own " +
		"goroutine reading the log and the receiver, where a channel hands it through two: with " +
		"one consumer they share two cores here, and it costs more than the channel; with more, " +
		"one append to the log serves them all, where the channel's publisher sends to each.",
	"Lossless delivery: CPU per value": "The same runs: the CPU time of the whole process per " +
		"value delivered (`cpu-ns/value`), its publisher's, its consumers' and the broker's " +
		"goroutines' together. The time per value above is set by the slowest of them and by how " +
		"they wait for each other on the cores they share; this is what a value costs all of them. " +
		"The benchmark's publisher sleeps while the slowest consumer is 1,024 values behind, as " +
		"the baseline's sleeps in a full channel.",
	"Latency below saturation": "The time from a `Publish` to a consumer's receipt of the value " +
		"(`BenchmarkLatency`), at a fixed offered rate the consumers keep up with: its median, " +
		"99th and 99.9th percentiles over every value, from a histogram exact to 0.8 %. The " +
		"publisher stamps each value just before its `Publish` and yields the processor until the " +
		"next is due. All the modes are measured in one run, each on a broker of its own and after " +
		"a warm-up that lets its log grow to what it keeps and wrap: the publisher takes them in " +
		"turn, a quarter of a millisecond each, in an order shuffled for each turn, so that the " +
		"stalls of the whole machine fall on all of them alike, and each ratio reads a mode " +
		"against the channel of the same run. A tail of milliseconds that the plain channel, with " +
		"no broker, shows too is the machine's: a consumer whose thread the machine has stopped. " +
		"Such a stall delays the one consumer it stops, and the more time a consumer runs for each " +
		"value, the more often it is the one: at the highest rate, where a consumer wakes for " +
		"every value, these stalls are what the 99th percentile of a follower or a handler is " +
		"made of, as it is of a channel's receiver given as much to do for each value. The 99.9th " +
		"percentile moves from run to run at every rate.",
	"Followers": "Followers read the log at their own pace: the publisher's cost with followers " +
		"reading, waiting or not, the reads themselves per value, and the wake-up of a parked " +
		"follower against a goroutine woken from a channel receive.",
}

// writeDoc writes docs/benchmarks.md: the stamp, how to read the tables,
// then each table with what it measures.
func writeDoc(w io.Writer, res *benchread.Set, st stamp) {
	fmt.Fprintf(w, `# Benchmarks

<!-- Written by make benchdoc from a run: do not edit by hand. -->

%s

Each figure is the median of the rounds, each round a run of every
benchmark once (`+"`-test.count=1`"+`); each ratio is the median of the
ratios within a round, so that a machine that drifts between rounds moves
a figure and its baseline alike. The baselines are the floor of the
machine: a non-blocking `+"`select`"+` send into a buffered channel, received at
once by the same goroutine, and the same send on a full channel. To
compare two revisions, run `+"`make regress REV=…`"+`, which interleaves them.
The benchmarks are in the root package's `+"`bench_test.go`"+`; a row names
the benchmark it reads where its label does not.

`, st.line(res))
	write(w, res, "##", notes)
}

// summaryRows are the rows of the README's summary: the floor, then what a
// user meets first.
var summaryRows = []string{
	raw,
	"PublishNoSubscriber",
	"PublishSaturated",
	"PublishDirect",
	"PublishFanout/n=10",
	"PublishFanout/n=1000",
	"PublishInterfaceToInterface",
	"HandlerAtLeastOnce",
	"PublishRetained",
	"PublishRetainedFollowed",
	"FollowerRead/batch=64",
	"Lossless/mode=channel/n=10",
	"Lossless/mode=channel-follower/n=10",
	"Lossless/mode=handler/n=10",
}

// writeSummary writes the README's table: the rows of summaryRows, as
// writeDoc gives them, and the stamp.
func writeSummary(w io.Writer, res *benchread.Set, st stamp) {
	rows := map[string]row{}
	for _, s := range sections() {
		for _, r := range s.rows {
			rows[r.bench] = r
		}
	}
	fmt.Fprintf(w, "| path | time | ratio | allocs/op |\n|---|---:|---|---:|\n")
	for _, bench := range summaryRows {
		if r, ok := rows[bench]; ok {
			fmt.Fprintln(w, rowLine(res, r))
		}
	}
	fmt.Fprintf(w, "\n%s Every figure: [docs/benchmarks.md](docs/benchmarks.md).\n", st.line(res))
}

// The markers of the README's block that writeSummary fills.
const (
	summaryBegin = "<!-- benchmarks: begin (make benchdoc writes this block) -->"
	summaryEnd   = "<!-- benchmarks: end -->"
)

// replaceBlock rewrites file's text between summaryBegin and summaryEnd
// with block.
func replaceBlock(file string, block []byte) error {
	return docblock.Replace(file, summaryBegin, summaryEnd, block)
}
