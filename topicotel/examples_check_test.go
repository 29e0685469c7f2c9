package topicotel_test

import (
	"embed"
	"testing"

	"github.com/seedaa7df82c/topic/internal/examplecheck"
)

// Every exported function, type and method of an exported type has an
// example that go doc shows beside it; none is exempt.
func TestEveryExportedNameHasAnExample(t *testing.T) {
	examplecheck.Check(t, packageFiles, nil)
}

// packageFiles holds the package's Go files, for examplecheck.Check.
//
//go:embed *.go
var packageFiles embed.FS
