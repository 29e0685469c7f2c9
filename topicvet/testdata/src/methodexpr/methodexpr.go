// A method expression takes its receiver as the first argument: the
// options after it are checked as in a method call.
package methodexpr

import (
	"context"

	"github.com/seedaa7df82c/topic"
)

func handle(b *topic.Broker) {
	stop := (*topic.Broker).Handle[float64](b, nil) // want `Handle panics on a nil function`
	defer stop()
	stop2 := (*topic.Broker).Handle[float64](b, func(context.Context, float64) error { return nil }, topic.Buffer[float64](1))
	defer stop2()
}
