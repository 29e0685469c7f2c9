// Package topicvet holds analyzers for programs that use package topic
// (github.com/seedaa7df82c/topic), where a Go type is a topic and the
// whole publish-subscribe graph of a program is in its type information.
//
// The analyzers follow the go/analysis conventions: run them with the
// topicvet command (topicvet ./..., or go vet -vettool=$(which topicvet)),
// or add them to gopls or golangci-lint like any analyzer.
//
//   - topiccancel: a cancel or stop function of Subscribe, Handle, Watch,
//     TimeCalls, or a Follower's Close, discarded or not called on every
//     path.
//   - topicoptions: an option or argument the core panics on, as far as
//     constants tell.
//   - unreceived: a type published that nothing in the program receives.
//   - unpublished: a subscription to a concrete type that nothing in the
//     program publishes.
//   - pointervalue: *T published where only T is received, or the reverse.
//
// The last three look at the whole program: they report in a package main
// and in Example functions, where every package of the program is in view
// (see the Graph analyzer); not in a library, which does not know its
// importers, nor in tests, which publish what nothing receives to show
// that nothing does.
//
// A finding is silenced by a directive on its line or the line above:
//
//	//topicvet:ignore topiccancel -- the subscription lives as long as the program
//
// A directive names one or more checks, comma-separated, and must give a
// reason after "--".
package topicvet

import "golang.org/x/tools/go/analysis"

// Analyzers are the analyzers of topicvet that report, in the order the
// topicvet command lists them.
var Analyzers = []*analysis.Analyzer{Cancel, Options, Unreceived, Unpublished, PointerValue}
