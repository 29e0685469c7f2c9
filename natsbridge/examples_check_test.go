package natsbridge_test

import (
	"embed"
	"testing"

	"github.com/seedaa7df82c/topic/internal/examplecheck"
)

// exampleExempt names the exported names of package natsbridge that need no
// example, each with the reason.
var exampleExempt = map[string]string{
	"Error.Error":  "satisfies error",
	"Error.Unwrap": "satisfies errors.Unwrap",
	"Op.String":    "satisfies fmt.Stringer",
}

// Every exported function, type and method of an exported type has an
// example that go doc shows beside it, unless exampleExempt says why not.
func TestEveryExportedNameHasAnExample(t *testing.T) {
	examplecheck.Check(t, packageFiles, exampleExempt)
}

// packageFiles holds the package's Go files, for examplecheck.Check.
//
//go:embed *.go
var packageFiles embed.FS
