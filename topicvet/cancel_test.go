package topicvet_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/seedaa7df82c/topic/topicvet"
)

func TestCancelReportsDiscardedAndUnusedCancels(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Cancel, "cancel")
}

func TestCancelFollowsAVariableThatIsASwitchTag(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Cancel, "cancel/switchtag")
}

// A subscription or handler given the Context option ends with the
// context: its cancel function may be left.
func TestCancelDoesNotReportASubscriptionBoundToAContext(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Cancel, "cancel/contextoption")
}

// A function literal the function defers runs on every return: a
// variable it uses is used on every path, though assigned after the defer.
func TestCancelCountsAUseInADeferredClosureOnEveryPath(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Cancel, "cancel/deferredclosure")
}

// A channel subscription of a broker the function makes ends with the
// broker; a local copy of a pointer to a broker made elsewhere does not
// make the broker the function's.
func TestCancelExemptsOnlyABrokerTheFunctionMakes(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Cancel, "cancel/sharedbroker")
}

// The return of main.main ends the program: nothing in its body is
// reported.
func TestCancelDoesNotReportMainMain(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Cancel, "cancel/mainmain")
}
