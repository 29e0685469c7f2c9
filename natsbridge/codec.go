package natsbridge

import "encoding/json"

// A Codec turns values of type T into message payloads and back.
//
// Marshal and Unmarshal may be called concurrently, from the goroutines of
// different exports and imports, so a Codec must be safe for concurrent use.
// An error from either is counted and reported (see Stats and
// Error) and costs that one value or message, never the export or import.
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
