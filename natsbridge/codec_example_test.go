package natsbridge_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

// An Event is a signup or a login: an interface, which JSON alone cannot
// decode.
type Event interface{ User() string }

type Signup struct{ Name, Plan string }

type Login struct{ Name string }

func (s Signup) User() string { return s.Name }
func (l Login) User() string  { return l.Name }

// eventCodec writes an Event as the name of its variant and its JSON.
type eventCodec struct{}

func (eventCodec) Marshal(e Event) ([]byte, error) {
	var kind string
	switch e.(type) {
	case Signup:
		kind = "signup"
	case Login:
		kind = "login"
	default:
		return nil, fmt.Errorf("unknown event %T", e)
	}
	data, err := json.Marshal(e)
	return append([]byte(kind+" "), data...), err
}

func (eventCodec) Unmarshal(data []byte) (Event, error) {
	kind, value, _ := bytes.Cut(data, []byte(" "))
	switch string(kind) {
	case "signup":
		var s Signup
		err := json.Unmarshal(value, &s)
		return s, err
	case "login":
		var l Login
		err := json.Unmarshal(value, &l)
		return l, err
	}
	return nil, fmt.Errorf("unknown event %q", kind)
}

// A Codec that names the variants of an interface type carries it across:
// the importing process gets the same concrete types back.
func ExampleCodec() {
	url, stop := exampleServer()
	defer stop()
	codec := natsbridge.WithCodec[Event](eventCodec{})

	var accounts, audit topic.Broker
	nc1, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc1.Close()
	out := natsbridge.New(&accounts, nc1, natsbridge.Config{})
	defer out.Close()
	nc2, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc2.Close()
	in := natsbridge.New(&audit, nc2, natsbridge.Config{})
	defer in.Close()
	events, cancel := audit.Subscribe(topic.Buffer[Event](2), topic.From(natsbridge.Unwrap[Event]))
	defer cancel()
	out.Export[Event]("accounts.events", codec)
	in.Import[Event]("accounts.events", codec)

	accounts.Publish(Signup{Name: "ada", Plan: "pro"})
	accounts.Publish(Login{Name: "ada"})
	for range 2 {
		e := <-events
		fmt.Printf("%T by %s\n", e, e.User())
	}
	// Output:
	// natsbridge_test.Signup by ada
	// natsbridge_test.Login by ada
}

// A Purchase needs an ID.
type Purchase struct{ ID int }

// validPurchases is JSON with a check: a purchase without an ID fails to
// decode.
type validPurchases struct{ natsbridge.JSON[Purchase] }

func (c validPurchases) Unmarshal(data []byte) (Purchase, error) {
	o, err := c.JSON.Unmarshal(data)
	if err == nil && o.ID == 0 {
		err = errors.New("a purchase without an ID")
	}
	return o, err
}

// JSON, the default codec, can be embedded in one of the application's:
// here one that refuses purchases without an ID, which the import counts
// and skips.
func ExampleJSON() {
	url, stop := exampleServer()
	defer stop()

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{
		OnError: func(e *natsbridge.Error) { fmt.Println(e) },
	})
	defer br.Close()
	purchases, cancel := b.Subscribe(topic.Buffer[natsbridge.Imported[Purchase]](1))
	defer cancel()
	br.Import[Purchase]("shop.purchases", natsbridge.WithCodec[Purchase](validPurchases{}))

	shop, _ := nats.Connect(url)
	defer shop.Close()
	shop.Publish("shop.purchases", []byte(`{"Item": "tea"}`))
	shop.Publish("shop.purchases", []byte(`{"ID": 7}`))
	fmt.Println("purchase", (<-purchases).Value.ID)
	// Output:
	// natsbridge: decode shop.purchases: a purchase without an ID
	// purchase 7
}

// Marshal is encoding/json's.
func ExampleJSON_Marshal() {
	type Order struct {
		ID   int    `json:"id"`
		Item string `json:"item,omitempty"`
	}
	data, err := natsbridge.JSON[Order]{}.Marshal(Order{ID: 7})
	fmt.Println(string(data), err)
	// Output:
	// {"id":7} <nil>
}

// Unmarshal decodes into a new value; it cannot decode into an interface
// type, which needs a codec that knows the concrete types.
func ExampleJSON_Unmarshal() {
	type Order struct{ ID int }
	o, err := natsbridge.JSON[Order]{}.Unmarshal([]byte(`{"ID": 7}`))
	fmt.Println(o, err)

	_, err = natsbridge.JSON[fmt.Stringer]{}.Unmarshal([]byte(`{"ID": 7}`))
	fmt.Println(err)
	// Output:
	// {7} <nil>
	// json: cannot unmarshal object into Go value of type fmt.Stringer
}
