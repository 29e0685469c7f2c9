package natsbridge

import (
	"encoding/json"
	"fmt"
)

// A Codec turns values of type T into message payloads and back.
//
// Marshal and Unmarshal may be called concurrently, from the goroutines of
// different exports and imports, so a Codec must be safe for concurrent use.
// An error from either, or a panic, which the bridge recovers as an error
// that says so, is counted and reported (see Stats and Error) and
// costs that one value or message, never the export or import, nor the
// process. An encoding failure is not retried: it would fail again.
type Codec[T any] interface {
	Marshal(v T) ([]byte, error)
	Unmarshal(data []byte) (T, error)
}

// JSON is the default Codec: encoding/json.
//
// encoding/json cannot decode into an interface type, so a T that is an
// interface, or that holds one in a field, needs a codec that knows the
// concrete types, such as one that writes a variant name beside the value.
type JSON[T any] struct{}

// Marshal returns the JSON encoding of v.
func (JSON[T]) Marshal(v T) ([]byte, error) { return json.Marshal(v) }

// Unmarshal decodes data into a new T.
func (JSON[T]) Unmarshal(data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// encode is c.Marshal(v), with a panic returned as an error.
func encode[T any](c Codec[T], v T) (data []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			data, err = nil, codecPanic("Marshal", p)
		}
	}()
	return c.Marshal(v)
}

// decode is c.Unmarshal(data), with a panic returned as an error.
func decode[T any](c Codec[T], data []byte) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, codecPanic("Unmarshal", p)
		}
	}()
	return c.Unmarshal(data)
}

// codecPanic is the error of a codec's method that panicked with p; it
// wraps p if p is an error.
func codecPanic(method string, p any) error {
	if e, ok := p.(error); ok {
		return fmt.Errorf("natsbridge: the codec's %s panicked: %w", method, e)
	}
	return fmt.Errorf("natsbridge: the codec's %s panicked: %v", method, p)
}
