// Command importer receives the orders of another process over NATS.
package main

import (
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

type Order struct{ ID int }

func main() {
	var b topic.Broker
	var br natsbridge.Bridge
	br.Import[Order]("orders")
	orders, cancel := b.Subscribe[natsbridge.Imported[Order]]() // published by the import: not reported
	defer cancel()
	<-orders
}
