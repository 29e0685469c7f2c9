package topicvet_test

import (
	"testing"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/seedaa7df82c/topic/topicvet"
)

// limits are the test programs where the whole-program checks cannot see
// everything and report nothing.
var limits = []string{"brokers", "implicit", "library", "localtypes", "nats/exporter", "nats/importer"}

func TestOptionsReportsWhatTheCorePanicsOn(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Options, "options", "methodexpr")
}

func TestUnreceivedReportsATypeNothingReceives(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Unreceived, append(limits, "program")...)
}

func TestUnpublishedReportsASubscriptionNothingPublishesTo(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Unpublished, append(limits, "unpublished")...)
}

func TestPointerValueReportsAPointerPublishedWhereTheValueIsReceived(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.PointerValue, append(limits, "pointervalue")...)
}

// An alias is the type it names, at any depth: byte is uint8, rune int32,
// any the empty interface, and a method naming a type through an alias
// implements an interface naming the type itself.
func TestAnAliasIsTheTopicItNames(t *testing.T) {
	t.Parallel()
	for _, a := range []*analysis.Analyzer{topicvet.Unreceived, topicvet.Unpublished, topicvet.PointerValue} {
		analysistest.Run(t, analysistest.TestData(), a, "alias")
	}
}

// *T published and received by an interface subscription (any) is not
// reported at the publication: the subscription of T, which waits for
// ever, is.
func TestPointerValueReportsTheSubscriptionWhenAnInterfaceReceivesThePointer(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.PointerValue, "pointervalue/receivedasany")
}

// go vet analyses a package main with its tests: what a test receives
// does not hide what the program itself loses.
func TestUnreceivedLeavesOutWhatATestReceives(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Unreceived, "testreceiver")
}

// A package only the tests import is no part of the program: what it
// receives does not hide what the program loses.
func TestUnreceivedLeavesOutWhatAPackageOnlyTheTestsImportReceives(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Unreceived, "testimport")
}

// A helper of another package that publishes or receives a type built
// from its type parameter (*T, []T, Box[T]) makes, at each instantiation,
// an endpoint of that type with the type argument put in.
func TestAHelperOfAnotherPackageMakesTheTypeItBuilds(t *testing.T) {
	t.Parallel()
	for _, a := range []*analysis.Analyzer{topicvet.Unreceived, topicvet.Unpublished, topicvet.PointerValue} {
		analysistest.Run(t, analysistest.TestData(), a, "helpertemplate")
	}
	analysistest.Run(t, analysistest.TestData(), topicvet.Unreceived, "helpertemplate/lost")
}

// A type a helper of another package builds is known by name: its
// package need not be among the program's imports (go vet's export data
// holds only what a package's API references), and a component without
// type parameters (error, struct{}, func()) is held by its key.
func TestAHelpersTemplateIsExpandedByName(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Unreceived, "byname", "byname/sink")
}

// A method with type parameters of its own does not implement an
// interface's method of its name: an interface subscription does not
// receive the type.
func TestAGenericMethodImplementsNoInterface(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Unreceived, "genericmethod")
}

// A From makes its type out of a publication of its source, for its own
// subscription only.
func TestUnpublishedCountsAFromForItsOwnSubscriptionOnly(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Unpublished, "from")
}

// A method of a generic type is followed to the instances of the type: a
// Worker[Job] handles Job, not every type.
func TestAGenericTypesMethodsAreFollowedToItsInstances(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Unreceived, "generictype", "genericfield")
}

// A generic method of a generic type is followed at its instances, with
// the receiver's type arguments and its own.
func TestAGenericMethodOfAGenericTypeIsFollowedAtItsInstances(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Unreceived, "genericmethodoftype")
}

// A method of a generic type makes its endpoints where it is called, not
// where the type's name is written: a Store[Config] whose Watch is never
// called receives nothing. An instance written in a function still counts
// as receiving, for a call through an interface, but is never reported.
func TestAGenericTypesMethodsAreFollowedAtTheirCalls(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), topicvet.Unreceived, "methodcalls", "methodcalls/iface")
	analysistest.Run(t, analysistest.TestData(), topicvet.Unpublished, "methodcalls/iface")
}
