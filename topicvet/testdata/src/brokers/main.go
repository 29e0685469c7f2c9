// A publication on one broker and a subscription on another are matched
// together: topics are matched across the program, whatever the broker,
// and no check reports (a limit), though the subscription waits for ever.
package main

import (
	"fmt"

	"github.com/seedaa7df82c/topic"
)

type Order struct{ ID int }

func main() {
	var orders, audit topic.Broker
	ch, cancel := audit.Subscribe[Order]()
	defer cancel()
	orders.Publish(Order{ID: 1})
	fmt.Println(<-ch)
}
