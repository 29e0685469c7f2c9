package main

import (
	"fmt"
	"time"

	"github.com/seedaa7df82c/topic"
)

// byte is uint8, rune is int32, any is interface{}: one type each, one
// topic; and an interface whose method names a type through an alias is
// implemented by a method that names the type itself.

type Stamp = time.Time

type Timed interface{ At() Stamp }

type Tick struct{ t time.Time }

func (k Tick) At() time.Time { return k.t }

type Getter interface{ Get() any }

type Cell struct{}

func (Cell) Get() interface{} { return nil }

func basics(b *topic.Broker) {
	docs, c1 := b.Subscribe[map[string]any]()
	defer c1()
	raw, c2 := b.Subscribe[[]byte]()
	defer c2()
	runes, c3 := b.Subscribe[[]rune]()
	defer c3()
	timed, c4 := b.Subscribe[Timed]()
	defer c4()
	getters, c5 := b.Subscribe[Getter]()
	defer c5()
	b.Publish(map[string]interface{}{"a": 1})
	b.Publish([]uint8{1, 2})
	b.Publish([]int32{'x'})
	b.Publish(Tick{})
	b.Publish(Cell{})
	fmt.Println(<-docs, <-raw, <-runes, <-timed, <-getters)
}
