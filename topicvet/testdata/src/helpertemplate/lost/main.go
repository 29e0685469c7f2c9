// A program that publishes a *Lost and a Box[Lost] through helpers of
// another package, and receives neither: each is reported at its call.
package main

import (
	"github.com/seedaa7df82c/topic"

	"helpertemplate/lib"
)

type Lost struct{}

func main() {
	var b topic.Broker
	lib.SendPtr(&b, Lost{}) // want `\*main.Lost is published, but nothing in the program receives it`
	lib.SendBox(&b, Lost{}) // want `lib.Box\[main.Lost\] is published, but nothing in the program receives it`
}
