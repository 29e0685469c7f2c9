// From makes a Fahrenheit for its own subscription, out of a Celsius: if
// nothing publishes Celsius, that subscription waits for ever; and a
// subscription of Fahrenheit without the From is given nothing by it.
package main

import (
	"fmt"

	"github.com/seedaa7df82c/topic"
)

type Celsius float64

type Fahrenheit float64

func main() {
	var b topic.Broker
	converted, cancel := b.Subscribe(topic.From(func(c Celsius) (Fahrenheit, bool) { return Fahrenheit(c*9/5 + 32), true })) // want `nothing in the program publishes`
	defer cancel()
	plain, cancelPlain := b.Subscribe[Fahrenheit]() // want `main.Fahrenheit is received \(subscribe\), but nothing in the program publishes it`
	defer cancelPlain()
	fmt.Println(<-converted, <-plain)
	kelvin(&b)
}

type Reading struct{ Celsius float64 }

type Kelvin float64

// A From whose source is published feeds its subscription.
func kelvin(b *topic.Broker) {
	k, cancel := b.Subscribe(topic.From(func(r Reading) (Kelvin, bool) { return Kelvin(r.Celsius + 273.15), true }))
	defer cancel()
	b.Publish(Reading{20})
	fmt.Println(<-k)
}
