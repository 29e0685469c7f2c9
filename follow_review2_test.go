package topic_test

// Adversarial review of the followers (a helper's, 2026-12-03): Commit
// after a Seek forward; AckWait's re-read of trimmed values.

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

// Commit panics for an offset the follower has not reached, and takes one
// it passed over by a Seek forward, as a commit after it would have.
func TestFollowCommitAfterASeekForward(t *testing.T) {
	var b topic.Broker
	b.Retain[frVal](topic.Retention{Count: 100})
	for i := range 10 {
		b.Publish(frVal{i})
	}
	f := b.Follow(topic.Name[frVal]("s"), topic.Replay[frVal](topic.Earliest()))
	f.Seek(7)
	buf := make([]topic.Record[frVal], 2)
	if n := f.Read(buf); n != 2 || buf[0].Offset != 7 {
		t.Fatalf("Read: %d from %d, want 2 from 7", n, buf[0].Offset)
	}
	if _, p := frPanic(func() { f.Commit(9) }); !p {
		t.Error("Commit(9), which the follower has not reached, did not panic")
	}
	if msg, p := frPanic(func() { f.Commit(2) }); p {
		t.Errorf("Commit(2), passed over by the Seek: %s", msg)
	}
	f.Close()
	again := b.Follow(topic.Name[frVal]("s"))
	defer again.Close()
	if again.Offset() != 3 {
		t.Errorf("resumed at %d, want 3, after the commit of 2", again.Offset())
	}
}

// What was read and not committed, and trimmed before AckWait let it be read
// again, is reported as skipped: its re-read is lost, and at least once
// cannot hold for it.
func TestFollowAckWaitReportsTrimmedReReadsAsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[frVal](topic.Retention{Count: 4})
		var losses []topic.Loss[frVal]
		f := b.Follow(topic.Name[frVal]("a"), topic.AckWait[frVal](10*time.Millisecond),
			topic.OnLoss(func(l topic.Loss[frVal]) { losses = append(losses, l) }))
		defer f.Close()
		for i := range 4 {
			b.Publish(frVal{i})
		}
		buf := make([]topic.Record[frVal], 10)
		if n := f.Read(buf); n != 4 {
			t.Fatalf("Read read %d, want 4", n)
		}
		for i := 4; i < 8; i++ {
			b.Publish(frVal{i}) // trims 0..3, read and not committed
		}
		time.Sleep(20 * time.Millisecond)
		n := f.Read(buf)
		if n != 4 || buf[0].Offset != 4 || buf[0].Skipped != 4 || len(losses) != 1 || losses[0].Offset != 0 || losses[0].Count != 4 {
			t.Errorf("Read %d from %d, Skipped %d, OnLoss %+v; want 4 from 4, and 0..3 reported skipped", n, buf[0].Offset, buf[0].Skipped, losses)
		}
	})
}
