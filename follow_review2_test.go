package topic_test

// Adversarial review of the followers (a helper's, 2026-12-03): Commit
// after a Seek forward; AckWait's re-read of trimmed values.

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

type fr2V struct{ N int }

// Commit panics for an offset the follower has not reached, and takes one
// it passed over by a Seek forward, as a commit after it would have.
func TestFollowCommitAfterASeekForward(t *testing.T) {
	var b topic.Broker
	b.Retain[fr2V](topic.Retention{Count: 100})
	for i := range 10 {
		b.Publish(fr2V{i})
	}
	f := b.Follow(topic.Name[fr2V]("s"), topic.Replay[fr2V](topic.Earliest()))
	f.Seek(7)
	buf := make([]topic.Record[fr2V], 2)
	if n := f.Read(buf); n != 2 || buf[0].Offset != 7 {
		t.Fatalf("Read: %d from %d, want 2 from 7", n, buf[0].Offset)
	}
	panics := func(o uint64) (p any) {
		defer func() { p = recover() }()
		f.Commit(o)
		return nil
	}
	if p := panics(9); p == nil {
		t.Error("Commit(9), which the follower has not reached, did not panic")
	}
	if p := panics(2); p != nil {
		t.Errorf("Commit(2), passed over by the Seek: %v", p)
	}
	f.Close()
	again := b.Follow(topic.Name[fr2V]("s"))
	defer again.Close()
	if again.Offset() != 3 {
		t.Errorf("resumed at %d, want 3, after the commit of 2", again.Offset())
	}
}

// cannot hold for it.
func TestFollowAckWaitReportsTrimmedReReadsAsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		b.Retain[fr2V](topic.Retention{Count: 4})
		var losses []topic.Loss[fr2V]
		f := b.Follow(topic.Name[fr2V]("a"), topic.AckWait[fr2V](10*time.Millisecond),
			topic.OnLoss(func(l topic.Loss[fr2V]) { losses = append(losses, l) }))
		defer f.Close()
		for i := range 4 {
			b.Publish(fr2V{i})
		}
		buf := make([]topic.Record[fr2V], 10)
		if n := f.Read(buf); n != 4 {
			t.Fatalf("Read read %d, want 4", n)
		}
		for i := 4; i < 8; i++ {
			b.Publish(fr2V{i}) // trims 0..3, read and not committed
		}
		time.Sleep(20 * time.Millisecond)
		n := f.Read(buf)
		if n != 4 || buf[0].Offset != 4 || buf[0].Skipped != 4 || len(losses) != 1 || losses[0].Offset != 0 || losses[0].Count != 4 {
			t.Errorf("Read %d from %d, Skipped %d, OnLoss %+v; want 4 from 4, and 0..3 reported skipped", n, buf[0].Offset, buf[0].Skipped, losses)
		}
	})
}
