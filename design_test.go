package topic_test

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDesignMapListsEverySourceFile keeps docs/design.md, the map of the
// package's files, complete and current: every source file of the root
// package and of the packages under internal/ is named in it, in backquotes
// as its path from the repository's root, and every Go file it names exists.
func TestDesignMapListsEverySourceFile(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([^`\\s]+\\.go)`").FindAllSubmatch(doc, -1) {
		listed[string(m[1])] = true
	}

	var files []string
	root, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, root...)
	err = filepath.WalkDir("internal", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "testdata":
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(path, ".go"):
			files = append(files, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") && !listed[f] {
			t.Errorf("docs/design.md does not list `%s`: add a line saying what it holds", f)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(listed)) {
		if _, err := os.Stat(filepath.FromSlash(f)); err != nil {
			t.Errorf("docs/design.md lists `%s`, which does not exist: remove or rename its line", f)
		}
	}
}
