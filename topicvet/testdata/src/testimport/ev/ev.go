// Package ev declares the event the program publishes.
package ev

type Ev struct{}
