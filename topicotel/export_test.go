package topicotel

// Causes are the causes reported, for the test that checks that they are
// every cause of topic.Lost.
var Causes = causes
