package cancel

import (
	"context"
	"time"

	"github.com/seedaa7df82c/topic"
)

type Tick struct{ N int }

func discarded(b *topic.Broker) {
	b.Handle(func(context.Context, Tick) error { return nil }) // want `the stop function of Handle is discarded`
	b.Watch(time.Second, func(topic.Incident) {})              // want `the stop function of Watch is discarded`
	b.Follow[Tick]()                                           // want `the Close of the Follower of Broker.Follow is discarded`
	ch, _ := b.Subscribe[Tick]()                               // want `the cancel function of Subscribe is assigned to _`
	<-ch
}

func deferred(b *topic.Broker) {
	ch, cancel := b.Subscribe[Tick]()
	defer cancel()
	<-ch
}

func notOnEveryPath(b *topic.Broker, early bool) {
	ch, cancel := b.Subscribe[Tick]() // want `the cancel function of Subscribe \(cancel\) is not used on every path: the return at line 29`
	if early {
		return
	}
	<-ch
	cancel()
}

func followerReadNotClosed(ctx context.Context, b *topic.Broker) {
	f := b.Follow[Tick]() // want `the Close of the Follower of Broker.Follow \(f\) is not used on every path`
	f.Next(ctx)
}

func followerClosed(ctx context.Context, b *topic.Broker) {
	f := b.Follow[Tick]()
	defer f.Close()
	f.Next(ctx)
}

func returned(b *topic.Broker) (<-chan Tick, func()) {
	return b.Subscribe[Tick]()
}

type service struct{ stop func() }

func stored(b *topic.Broker, s *service) {
	s.stop = b.Handle(func(context.Context, Tick) error { return nil })
}

func passedOn(b *topic.Broker, stops *[]func()) {
	stop := b.TimeCalls(func(topic.Call) {})
	*stops = append(*stops, stop)
}

func silenced(b *topic.Broker) {
	//topicvet:ignore topiccancel -- the audit lives as long as the program
	b.Handle(func(context.Context, Tick) error { return nil })
	b.Handle(func(context.Context, Tick) error { return nil }) //topicvet:ignore topiccancel -- lives as long as the program
}

// silencedFunction registers subscriptions that last until the broker's
// Shutdown.
//
//topicvet:ignore topiccancel -- they last until Shutdown
func silencedFunction(b *topic.Broker) {
	b.Handle(func(context.Context, Tick) error { return nil })
	ch, _ := b.Subscribe[Tick]()
	<-ch
}

func silencedWithoutReason(b *topic.Broker) {
	//topicvet:ignore topiccancel
	b.Handle(func(context.Context, Tick) error { return nil }) // want `the stop function of Handle is discarded`
}

func inClosure(b *topic.Broker, early bool) func() {
	return func() {
		_, cancel := b.Subscribe[Tick]() // want `the cancel function of Subscribe \(cancel\) is not used on every path`
		if early {
			return
		}
		cancel()
	}
}

func shutDown(ctx context.Context, b *topic.Broker) {
	defer b.Shutdown(ctx)
	b.Handle(func(context.Context, Tick) error { return nil })
}

func localBroker() {
	var b topic.Broker
	ch, _ := b.Subscribe[Tick]()
	b.Publish(Tick{})
	<-ch
	b.Follow[Tick]()
	b.Subscribe(topic.Follow[Tick]())                          // want `the cancel function of Subscribe is discarded`
	b.Handle(func(context.Context, Tick) error { return nil }) // want `the stop function of Handle is discarded`
}
