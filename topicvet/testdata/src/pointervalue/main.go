package main

import (
	"github.com/seedaa7df82c/topic"

	"program/lib"
)

type Payment struct{ ID int }

type Shipment struct{ ID int }

func main() {
	var b topic.Broker
	payments, cancelPayments := b.Subscribe[Payment]()
	defer cancelPayments()
	b.Publish(&Payment{ID: 1}) // want `\*main.Payment is published, but only main.Payment is received`
	<-payments
	shipments, cancelShipments := b.Subscribe[*Shipment]()
	defer cancelShipments()
	b.Publish(Shipment{ID: 1}) // want `main.Shipment is published, but only \*main.Shipment is received`
	<-shipments
	// The publication is in a library: reported at the subscription.
	parcels, cancelParcels := b.Subscribe[*lib.Parcel]() // want `\*lib.Parcel is received, but lib.Parcel is published`
	defer cancelParcels()
	<-parcels
}
