package switchtag

import (
	"context"

	"github.com/seedaa7df82c/topic"
)

type Tick struct{}

// A switch on the follower itself: its tag is a bare identifier, a node of
// the control-flow graph of its own.
func switchOnFollower(ctx context.Context, b *topic.Broker) {
	f := b.Follow[Tick]()
	switch f {
	case nil:
		return
	}
	defer f.Close()
	f.Next(ctx)
}
