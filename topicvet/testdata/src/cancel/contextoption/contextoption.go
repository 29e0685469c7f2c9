// The Context option binds a subscription to ctx: "when ctx is done, the
// subscription is cancelled as if by its cancellation function" (the
// core's doc of Context). Its cancel function may be left: it is not
// "never cancelled".
package contextoption

import (
	"context"

	"github.com/seedaa7df82c/topic"
)

type Price struct{ Cents int }

// Watch streams prices until ctx ends: the Context option cancels the
// subscription then.
func Watch(ctx context.Context, b *topic.Broker) <-chan Price {
	ch, _ := b.Subscribe(topic.Buffer[Price](1), topic.Context[Price](ctx))
	return ch
}

// Serve handles prices until ctx ends.
func Serve(ctx context.Context, b *topic.Broker) {
	b.Handle(func(context.Context, Price) error { return nil }, topic.Context[Price](ctx))
}

// Without the option, the handler is stopped by nothing.
func ServeForEver(b *topic.Broker) {
	b.Handle(func(context.Context, Price) error { return nil }, topic.Buffer[Price](1)) // want `the stop function of Handle is discarded`
}
