// Command testreport reads the output of `go test -json` and says what a
// reader of a check needs: the log as go test -v would have printed it, the
// count of tests that passed and failed, and, for each test that failed, its
// whole output in a file of its own, named in the summary.
//
//	testreport -log FILE -failed DIR [json-file...]
//
// It reads standard input when no file is named, writes the plain log to
// FILE, one file per failed test (and per package that failed outside its
// tests: a build error, a panic, a timeout) into DIR, and prints to standard
// output a line of counts and a line per failure. It exits 1 if anything
// failed, 0 otherwise. scripts/check runs it on the race and cover steps.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// An event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // of a build-output event: the package being built
	// FailedBuild, of a package's fail event, is the ImportPath of the
	// build that failed it: its build-output says why.
	FailedBuild string
}

// A key names one test of one package; Test is empty for the package's own
// output (its build, its PASS or FAIL line, a panic outside a test).
type key struct{ Package, Test string }

// A report is what the events of a run add up to.
type report struct {
	out     map[key]*strings.Builder // every line printed, by test
	failed  []key                    // in the order their failure was told
	passed  int                      // tests and examples, subtests included
	top     int                      // top-level tests and examples that passed
	skipped int
	builds  map[string]string // package -> the build that failed it
}

func newReport() *report {
	return &report{out: map[key]*strings.Builder{}, builds: map[string]string{}}
}

// add takes one event, writing its output to plain as well.
func (r *report) add(e event, plain io.Writer) error {
	if e.Action == "build-output" {
		e.Action, e.Package = "output", e.ImportPath
	}
	k := key{e.Package, e.Test}
	switch e.Action {
	case "output":
		b := r.out[k]
		if b == nil {
			b = new(strings.Builder)
			r.out[k] = b
		}
		b.WriteString(e.Output)
		_, err := io.WriteString(plain, e.Output)
		return err
	case "pass":
		if e.Test != "" {
			r.passed++
			if !strings.Contains(e.Test, "/") {
				r.top++
			}
		}
	case "skip":
		if e.Test != "" {
			r.skipped++
		}
	case "fail":
		r.failed = append(r.failed, k)
		if e.Test == "" && e.FailedBuild != "" {
			r.builds[e.Package] = e.FailedBuild
		}
	}
	return nil
}

// unsafeName matches what a file name should not hold.
var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// fileName is the name of the file a failure's output is written to.
func fileName(k key) string {
	name := filepath.Base(k.Package)
	if k.Test != "" {
		name += "." + k.Test
	}
	return unsafeName.ReplaceAllString(name, "_") + ".txt"
}

// outputOf is what a failed test printed: its own lines, and those of its
// subtests, which the JSON tells apart but the reader wants together. For a
// package that failed to build (or to vet), it is what its build said
// first (the go command tells it apart, under the build's import path),
// then the package's own lines ("[build failed]").
func (r *report) outputOf(k key) string {
	if k.Test == "" {
		var s strings.Builder
		if build := r.builds[k.Package]; build != "" {
			if b := r.out[key{Package: build}]; b != nil {
				s.WriteString(b.String())
			}
		}
		if b := r.out[k]; b != nil {
			s.WriteString(b.String())
		}
		return s.String()
	}
	var subs []key
	for o := range r.out {
		if o.Package == k.Package && (o.Test == k.Test || strings.HasPrefix(o.Test, k.Test+"/")) {
			subs = append(subs, o)
		}
	}
	slices.SortFunc(subs, func(a, b key) int { return strings.Compare(a.Test, b.Test) })
	var s strings.Builder
	for _, o := range subs {
		s.WriteString(r.out[o].String())
	}
	return s.String()
}

// write writes each failure's output into dir and says, to w, the counts
// and where each failure's output is.
func (r *report) write(w io.Writer, dir string) error {
	fmt.Fprintf(w, "%d tests and examples passed (%d with subtests), %d skipped, %d failed\n",
		r.top, r.passed, r.skipped, r.failedTests())
	if len(r.failed) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, k := range r.failed {
		if k.Test == "" && r.testFailedIn(k.Package) {
			continue // its failed tests say it
		}
		name := filepath.Join(dir, fileName(k))
		if err := os.WriteFile(name, []byte(r.outputOf(k)), 0o644); err != nil {
			return err
		}
		what := k.Test
		if what == "" {
			what = "(the package)"
		}
		fmt.Fprintf(w, "FAIL %s %s: %s\n", k.Package, what, name)
	}
	return nil
}

// testFailedIn reports whether a test of package pkg failed.
func (r *report) testFailedIn(pkg string) bool {
	return slices.ContainsFunc(r.failed, func(k key) bool { return k.Package == pkg && k.Test != "" })
}

// failedTests counts the tests that failed, subtests included, but not
// their packages.
func (r *report) failedTests() int {
	n := 0
	for _, k := range r.failed {
		if k.Test != "" {
			n++
		}
	}
	return n
}

// read adds every event of in to r. A line that is not an event (go test
// prints a build failure's lines outside the JSON, so does a vet failure)
// goes to the package-less output and to plain as it is.
func (r *report) read(in io.Reader, plain io.Writer) error {
	s := bufio.NewScanner(in)
	s.Buffer(make([]byte, 1<<20), 64<<20)
	for s.Scan() {
		line := s.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			e = event{Action: "output", Output: string(line) + "\n"}
		}
		if err := r.add(e, plain); err != nil {
			return err
		}
	}
	return s.Err()
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("testreport: ")
	logName := flag.String("log", "", "write the plain log (as go test -v prints it) to this `file`")
	dir := flag.String("failed", "failed", "write the output of each failed test into this `folder`")
	flag.Parse()

	plain := io.Discard
	if *logName != "" {
		f, err := os.Create(*logName)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		plain = f
	}
	r := newReport()
	if flag.NArg() == 0 {
		if err := r.read(os.Stdin, plain); err != nil {
			log.Fatal(err)
		}
	}
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			log.Fatal(err)
		}
		err = r.read(f, plain)
		f.Close()
		if err != nil {
			log.Fatal(err)
		}
	}
	if err := r.write(os.Stdout, *dir); err != nil {
		log.Fatal(err)
	}
	if len(r.failed) > 0 {
		os.Exit(1)
	}
}
