// Command exporter publishes orders to another process over NATS.
package main

import (
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

type Order struct{ ID int }

func main() {
	var b topic.Broker
	var br natsbridge.Bridge
	br.Export[Order]("orders")
	b.Publish(Order{ID: 1}) // received by the export: not reported
}
