package topic_test

import (
	"testing"

	"github.com/seedaa7df82c/topic/internal/examplecheck"
)

// exampleExempt names the exported names of package topic that need no
// example, each with the reason.
var exampleExempt = map[string]string{
	"Cause.String":          "satisfies fmt.Stringer",
	"Policy.String":         "satisfies fmt.Stringer",
	"PanicError.Error":      "satisfies error",
	"PermanentError.Error":  "satisfies error",
	"PermanentError.Unwrap": "satisfies errors.Unwrap",
}

// Every exported function, type and method of an exported type has an
// example that go doc shows beside it, unless exampleExempt says why not.
func TestEveryExportedNameHasAnExample(t *testing.T) {
	examplecheck.Check(t, sources, exampleExempt)
}

// topicdebug, topictest, topicotel and natsbridge check themselves.
