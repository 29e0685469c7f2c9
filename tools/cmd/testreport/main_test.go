package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The events of a run in which one test passed, one failed in a subtest,
// and a second package failed outside any test (a panic at init).
const run = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestGood"}
{"Action":"output","Package":"p","Test":"TestGood","Output":"=== RUN   TestGood\n"}
{"Action":"output","Package":"p","Test":"TestGood","Output":"--- PASS: TestGood (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestGood"}
{"Action":"run","Package":"p","Test":"TestBad"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Action":"output","Package":"p","Test":"TestBad/sub","Output":"    bad_test.go:9: got 1, want 2\n"}
{"Action":"fail","Package":"p","Test":"TestBad/sub"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestBad"}
{"Action":"output","Package":"p","Output":"FAIL\n"}
{"Action":"fail","Package":"p"}
not json: a line the go command printed itself
{"Action":"output","Package":"q","Output":"panic: at init\n"}
{"Action":"fail","Package":"q"}
`

func TestAFailedTestsOutputIsKeptAndNamed(t *testing.T) {
	dir := t.TempDir()
	var plain, summary strings.Builder
	r := newReport()
	if err := r.read(strings.NewReader(run), &plain); err != nil {
		t.Fatal(err)
	}
	if err := r.write(&summary, dir); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plain.String(), "--- FAIL: TestBad") || !strings.Contains(plain.String(), "not json") {
		t.Errorf("plain log lacks a line:\n%s", plain.String())
	}
	want := "1 tests and examples passed (1 with subtests), 0 skipped, 2 failed\n" +
		"FAIL p TestBad/sub: " + filepath.Join(dir, "p.TestBad_sub.txt") + "\n" +
		"FAIL p TestBad: " + filepath.Join(dir, "p.TestBad.txt") + "\n" +
		"FAIL q (the package): " + filepath.Join(dir, "q.txt") + "\n"
	if summary.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", summary.String(), want)
	}
	bad, err := os.ReadFile(filepath.Join(dir, "p.TestBad.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "=== RUN   TestBad\n--- FAIL: TestBad (0.00s)\n    bad_test.go:9: got 1, want 2\n"; string(bad) != want {
		t.Errorf("TestBad's file:\n%s\nwant:\n%s", bad, want)
	}
	// The line outside the JSON is nobody's failure: q failed in no build.
	if q, err := os.ReadFile(filepath.Join(dir, "q.txt")); err != nil || string(q) != "panic: at init\n" {
		t.Errorf("q's file: %q, %v; want only its own line", q, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "p.txt")); err == nil {
		t.Error("the package of a failed test got a file of its own")
	}
}

func TestARunWithoutFailuresWritesNoFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "failed")
	var summary strings.Builder
	r := newReport()
	ok := `{"Action":"pass","Package":"p","Test":"ExampleX"}` + "\n" + `{"Action":"skip","Package":"p","Test":"TestY"}` + "\n"
	if err := r.read(strings.NewReader(ok), &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	if err := r.write(&summary, dir); err != nil {
		t.Fatal(err)
	}
	if want := "1 tests and examples passed (1 with subtests), 1 skipped, 0 failed\n"; summary.String() != want {
		t.Errorf("summary %q, want %q", summary.String(), want)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("the folder of failures was made though nothing failed")
	}
}

// A package whose test build failed vet: go test -json tells why in
// build-output events under the build's import path, and the package's
// own fail event only names that build.
const vetFailed = `{"ImportPath":"p [p.test]","Action":"build-output","Output":"# p\n"}
{"ImportPath":"p [p.test]","Action":"build-output","Output":"./p_test.go:3:39: fmt.Printf format %d has arg \"s\" of wrong type string\n"}
{"ImportPath":"p [p.test]","Action":"build-fail"}
{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n","OutputType":"frame"}
{"Action":"fail","Package":"p","Elapsed":0,"FailedBuild":"p [p.test]"}
`

func TestAFailedBuildsFileSaysWhyItFailed(t *testing.T) {
	dir := t.TempDir()
	var summary strings.Builder
	r := newReport()
	if err := r.read(strings.NewReader(vetFailed), &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	if err := r.write(&summary, dir); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "p.txt")
	if want := "0 tests and examples passed (0 with subtests), 0 skipped, 0 failed\nFAIL p (the package): " + name + "\n"; summary.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", summary.String(), want)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# p\n./p_test.go:3:39: fmt.Printf format %d has arg \"s\" of wrong type string\nFAIL\tp [build failed]\n"; string(got) != want {
		t.Errorf("the package's file:\n%s\nwant:\n%s", got, want)
	}
}
