// *Order is published and received by a subscription of any; the
// subscription of Order waits for ever: pointervalue reports it at the
// subscription, as the publication, which any receives, is not reported.
package main

import (
	"fmt"

	"github.com/seedaa7df82c/topic"
)

type Order struct{ ID int }

func main() {
	var b topic.Broker
	all, cancelAll := b.Subscribe[any]()
	defer cancelAll()
	orders, cancel := b.Subscribe[Order]() // want `main.Order is received, but \*main.Order is published`
	defer cancel()
	b.Publish(&Order{ID: 1})
	fmt.Println(<-all, <-orders)
}
