package topic

import "context"

// Settle waits until the broker's handlers are idle, and returns nil; or
// until ctx ends, and returns its error. It is for tests and for programs
// that must know their publications have been handled, as topictest.Settle
// does.
//
// The handlers waited for are those registered when Settle is called, and
// idle means that each has nothing queued and no value in hand (no call of
// its function in flight, no retry pending), and that each handler that
// follows a retained type has read its log to the end. That is decided the
// way Shutdown decides it, by two rounds of probes that find every handler
// waiting, having taken nothing in between: so the values handlers publish
// to each other are followed to the end of a pipeline, and when Settle
// returns nil no handler held a value at one moment during the call, after
// every publication that happened before the call. Publications from other
// goroutines during the call may prolong it, and may be handled or not by
// the time it returns.
//
// Channel subscriptions and followers read by the program (Follow, and
// Subscribe with the Follow option) are not waited for: what they hold is
// their receiver's. A handler whose function waits inside Shutdown or the
// stop of another handler is not idle; one whose function never returns
// holds Settle until ctx ends. After Shutdown, Settle returns nil once the
// handlers have ended. Called from a handler's function (or from a From or
// OnLoss function its goroutine runs), Settle panics: it would wait for
// itself. A nil ctx panics.
func (b *Broker) Settle(ctx context.Context) error {
	mustContext(ctx, "Settle")
	id := goid()
	b.mu.Lock()
	if b.handlerOfLocked(id) != nil {
		b.mu.Unlock()
		panic("topic: Settle called from a handler's function, which it would wait for")
	}
	hs := make([]handlerRef, 0, len(b.handlers))
	for h := range b.handlers {
		hs = append(hs, h)
	}
	b.mu.Unlock()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		parked, changed := b.park.snapshot()
		if len(parked) > 0 {
			// A handler waits inside a Shutdown or a stop, holding a value.
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		switch q, cut := quiet(&b.probing, hs, nil, changed, ctx.Done()); {
		case cut:
			return ctx.Err()
		case q:
			return nil
		}
	}
}
