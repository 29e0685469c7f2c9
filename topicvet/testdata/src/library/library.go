// Package library publishes for its importers: analysed alone, it does not
// know them, and nothing is reported.
package library

import "github.com/seedaa7df82c/topic"

// Shipped is published for the importers of the package.
type Shipped struct{ ID int }

// Ship publishes a Shipped.
func Ship(b *topic.Broker, id int) { b.Publish(Shipped{ID: id}) }

// Wait subscribes to a type nothing here publishes: an importer may.
func Wait(b *topic.Broker) (<-chan Returned, func()) { return b.Subscribe[Returned]() }

// Returned is published by the importers of the package.
type Returned struct{ ID int }
