// Package box declares a generic type that lib's helpers build, and that
// the program does not import.
package box

type Box[T any] struct{ V T }
