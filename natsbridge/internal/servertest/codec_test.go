package servertest_test

import (
	"encoding/json"
	"fmt"
)

// A Shape is an interface: encoding/json cannot decode into it.
type Shape interface{ Area() float64 }

type Circle struct{ R float64 }
type Rect struct{ W, H float64 }

func (c Circle) Area() float64 { return 3 * c.R * c.R }
func (r Rect) Area() float64   { return r.W * r.H }

// A Drawn event holds a Shape in a field.
type Drawn struct {
	By    string
	Shape Shape
}

// drawnCodec encodes a Drawn with its shape as a named variant:
// {"by":"ann","kind":"circle","shape":{"R":1}}.
type drawnCodec struct{}

type drawnWire struct {
	By    string          `json:"by"`
	Kind  string          `json:"kind"`
	Shape json.RawMessage `json:"shape"`
}

func (drawnCodec) Marshal(d Drawn) ([]byte, error) {
	var kind string
	switch d.Shape.(type) {
	case Circle:
		kind = "circle"
	case Rect:
		kind = "rect"
	default:
		return nil, fmt.Errorf("drawnCodec: unknown shape %T", d.Shape)
	}
	shape, err := json.Marshal(d.Shape)
	if err != nil {
		return nil, err
	}
	return json.Marshal(drawnWire{By: d.By, Kind: kind, Shape: shape})
}

func (drawnCodec) Unmarshal(data []byte) (Drawn, error) {
	var w drawnWire
	if err := json.Unmarshal(data, &w); err != nil {
		return Drawn{}, err
	}
	var s Shape
	var err error
	switch w.Kind {
	case "circle":
		var c Circle
		err = json.Unmarshal(w.Shape, &c)
		s = c
	case "rect":
		var r Rect
		err = json.Unmarshal(w.Shape, &r)
		s = r
	default:
		return Drawn{}, fmt.Errorf("drawnCodec: unknown kind %q", w.Kind)
	}
	return Drawn{By: w.By, Shape: s}, err
}
