package topicvet

import (
	"reflect"
	"strings"

	"golang.org/x/tools/go/analysis"

	"github.com/seedaa7df82c/topic/topicvet/internal/topics"
)

// Graph collects the topics of each package: its publications and
// receptions, and those of the generic helpers it instantiates. It reports
// nothing; it carries each package's endpoints, with those of everything
// it imports, to its importers as a fact, and its result is the program in
// view of the package (a *topics.Program).
var Graph = &analysis.Analyzer{
	Name:       "topicgraph",
	Doc:        "collect the publications and subscriptions of package topic (for the whole-program checks of topicvet)",
	URL:        "https://pkg.go.dev/github.com/seedaa7df82c/topic/topicvet",
	Run:        func(pass *analysis.Pass) (any, error) { return topics.Gather(pass), nil },
	FactTypes:  []analysis.Fact{new(topics.PackageFact), new(topics.HelperFact)},
	ResultType: reflect.TypeFor[*topics.Program](),
}

// Unreceived reports a type published that nothing receives.
var Unreceived = wholeProgram(topics.Unreceived, `report a type published that nothing in the program receives

A value published on a type that no subscription, handler, follower,
interface subscription (any among them) or From source receives is lost
for good, and nothing fails: a renamed event, a subscription removed, a
value published where a pointer was meant. The check is reported once per
type, at its first publication in a package main or an Example function,
when no package of the program receives it.`)

// Unpublished reports a subscription that nothing publishes to.
var Unpublished = wholeProgram(topics.Unpublished, `report a subscription to a type that nothing in the program publishes

A subscription, handler, follower or read of a concrete type that no
package of the program publishes waits forever, unless a From in its own
argument list makes it out of a source that is published (a From gives its
type to its own subscription only). Types of package topic (DeadLetter,
Record) are left out: the broker publishes them. Reported at each such
reception in a package main or an Example function.`)

// PointerValue reports *T published where T is received, or the reverse.
var PointerValue = wholeProgram(topics.PointerValue, `report *T published where only T is received, or the reverse

A subscription receives its own type only: *Order and Order are two
topics. A value published as &order reaches the interface subscriptions it
implements, and silently no subscriber of Order. Reported instead of
unreceived or unpublished when the other of *T and T would have matched.`)

// wholeProgram returns the analyzer of one whole-program check.
func wholeProgram(check, doc string) *analysis.Analyzer {
	return &analysis.Analyzer{
		Name:     check,
		Doc:      doc,
		URL:      "https://pkg.go.dev/github.com/seedaa7df82c/topic/topicvet",
		Requires: []*analysis.Analyzer{Graph},
		Run: func(pass *analysis.Pass) (any, error) {
			prog := pass.ResultOf[Graph].(*topics.Program)
			r := topics.NewReporter(pass, check)
			for _, f := range prog.Check(func(e topics.Endpoint) bool { return inView(pass, e) }) {
				if f.Check == check {
					r.Report(f.At.TokenPos(), f.Message)
				}
			}
			return nil, nil
		},
	}
}

// inView reports whether e is where the whole program is known and meant:
// in the package being analysed, and in a package main (but its tests) or
// an Example function. A library does not know its importers, which may
// receive what it publishes; a test publishes what nothing receives to
// show that nothing does.
func inView(pass *analysis.Pass, e topics.Endpoint) bool {
	if !e.TokenPos().IsValid() {
		return false
	}
	if strings.HasSuffix(pass.Fset.Position(e.TokenPos()).Filename, "_test.go") {
		return e.InExample()
	}
	return pass.Pkg.Name() == "main"
}
