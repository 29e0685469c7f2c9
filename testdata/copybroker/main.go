// Command copybroker copies a used Broker by value, which go vet must
// report. It is compiled only by TestGoVetReportsACopiedBroker.
package main

import "github.com/seedaa7df82c/topic"

func main() {
	var b topic.Broker
	b.Publish(1)
	c := b // copies the Broker after first use
	c.Publish(2)
	use(b)
}

func use(b topic.Broker) { b.Publish(3) } // receives a copy
