// Command unretained uses every kind of subscription but a follower, and
// retains no type: its binary must hold no code of a log or a follower. It
// is compiled only by TestAnUnretainedTypeCompilesNoLogCode.
package main

import (
	"context"

	"github.com/seedaa7df82c/topic"
)

type (
	order   struct{ ID int }
	invoice struct{ Cents int }
	note    struct{ Text string }
)

func main() {
	var b topic.Broker
	orders, cancel := b.Subscribe[order](topic.Buffer[order](1))
	defer cancel()
	notes, cancelNotes := b.Subscribe[note](topic.From(func(o order) (note, bool) { return note{}, true }))
	defer cancelNotes()
	stop := b.Handle(func(context.Context, invoice) error { return nil }, topic.Retry[invoice](topic.RetryPolicy{Attempts: 2}))
	defer stop()
	b.Publish(order{ID: 1})
	b.Publish(invoice{Cents: 1})
	<-orders
	<-notes
	b.Shutdown(context.Background())
}
