package topic_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A type that is subscribed to, handled or published, but not retained,
// costs its program the code of a subscription and no more: none of a log,
// a follower or a hand-off, whose methods are compiled for each type that
// uses them. (Each type a program uses is compiled anew in every generic
// function it reaches: a type assertion to a follower of T in the code of
// every subscription once made each subscribed type carry a log's code,
// doubling the compile of a program of many types.) The program in
// testdata/unretained uses every kind of subscription but a follower, and
// retains no type.
func TestAnUnretainedTypeCompilesNoLogCode(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "unretained")
	if out, err := goCommand(t, "build", "-o", bin, "./testdata/unretained").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := goCommand(t, "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	if !strings.Contains(string(out), "topic.(*sub[") {
		t.Fatalf("go tool nm lists no subscription's code:\n%.2000s", out)
	}
	for _, m := range regexp.MustCompile(`(?m)^.* (\S*topic\.[(*]*(?:follower|logOf|handoff|valueFeed|recordFeed)\[.*)$`).FindAllSubmatch(out, 10) {
		t.Errorf("a program that retains no type holds %s", m[1])
	}
}
