// A local variable that holds a pointer to a broker the function did not
// make is not a broker the function makes: the broker outlives the call,
// and so does the subscription.
package sharedbroker

import "github.com/seedaa7df82c/topic"

type Tick struct{}

type Server struct{ broker *topic.Broker }

func (s *Server) first() Tick {
	b := s.broker
	ch, _ := b.Subscribe[Tick]() // want `the cancel function of Subscribe is assigned to _`
	return <-ch
}

func (s *Server) firstDirect() Tick {
	ch, _ := s.broker.Subscribe[Tick]() // want `the cancel function of Subscribe is assigned to _`
	return <-ch
}

// A broker the function makes: its channel subscriptions end with it.
func own() Tick {
	var b topic.Broker
	ch, _ := b.Subscribe[Tick]()
	return <-ch
}

func ownPointer() Tick {
	b := &topic.Broker{}
	ch, _ := b.Subscribe[Tick]()
	return <-ch
}

func ownNew() Tick {
	b := new(topic.Broker)
	ch, _ := b.Subscribe[Tick]()
	return <-ch
}

func ownAddress() Tick {
	var v topic.Broker
	b := &v
	ch, _ := b.Subscribe[Tick]()
	return <-ch
}

func sharedParameterCopy(shared *topic.Broker) Tick {
	var b *topic.Broker
	b = shared
	ch, _ := b.Subscribe[Tick]() // want `the cancel function of Subscribe is assigned to _`
	return <-ch
}
