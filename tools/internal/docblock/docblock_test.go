package docblock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplaceRewritesOnlyTheBlock(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "README.md")
	const begin, end = "<!-- x: begin -->", "<!-- x: end -->"
	if err := os.WriteFile(file, []byte("before\n"+begin+"\nold\n"+end+"\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Replace(file, begin, end, []byte("new\nlines\n")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(file)
	if want := "before\n" + begin + "\nnew\nlines\n" + end + "\nafter\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	bare := filepath.Join(dir, "bare.md")
	if err := os.WriteFile(bare, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Replace(bare, begin, end, nil); err == nil || !strings.Contains(err.Error(), "has no block") {
		t.Errorf("a file without the markers: %v", err)
	}
	if err := Replace(filepath.Join(dir, "missing.md"), begin, end, nil); err == nil {
		t.Error("a missing file: no error")
	}
}
