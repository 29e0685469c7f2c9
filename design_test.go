package topic_test

import (
	"embed"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// sources holds the Go files the design map must list, and the map. They
// are embedded, not read from the disk: a test that lists a folder makes
// the go command hash the folder's entries, dist/ among them, and a run
// that writes into dist/ would then never find this package's results in
// the test cache.
//
//go:embed *.go internal/*/*.go internal/*/*/*.go docs/design.md
var sources embed.FS

// TestDesignMapListsEverySourceFile keeps docs/design.md, the map of the
// package's files, complete and current: every source file of the root
// package and of the packages under internal/ is named in it, in backquotes
// as its path from the repository's root, and every Go file it names exists.
func TestDesignMapListsEverySourceFile(t *testing.T) {
	doc, err := fs.ReadFile(sources, "docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([^`\\s]+\\.go)`").FindAllSubmatch(doc, -1) {
		listed[string(m[1])] = true
	}

	var files []string
	err = fs.WalkDir(sources, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no source files embedded")
	}

	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") && !listed[f] {
			t.Errorf("docs/design.md does not list `%s`: add a line saying what it holds", f)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(listed)) {
		if _, err := fs.Stat(sources, f); err != nil {
			t.Errorf("docs/design.md lists `%s`, which does not exist: remove or rename its line", f)
		}
	}
}
