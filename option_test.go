package topic_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// A buffer is allocated whole, so a huge one would kill the process with a
// fatal out-of-memory error no recover catches: Subscribe panics instead.
func TestHugeBufferPanicsAtSubscribe(t *testing.T) {
	t.Parallel()
	for _, n := range []int{topic.MaxBuffer + 1, 1 << 30, int(^uint(0) >> 1)} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			wantPanicAtSubscribe(t, func() topic.Option[int] { return topic.Buffer[int](n) })
		})
	}
}

// The byte bound catches large values below the count bound.
func TestBufferOfLargeValuesPanicsAboveTheByteBound(t *testing.T) {
	t.Parallel()
	type page [4096]byte
	var b topic.Broker
	n := topic.MaxBufferBytes/4096 + 1 // within MaxBuffer
	msg, panicked := panicMessage(func() { b.Subscribe(topic.Buffer[page](n)) })
	if !panicked || !strings.HasPrefix(msg, "topic: ") || !strings.Contains(msg, "MaxBufferBytes") {
		t.Errorf("Buffer(%d) of 4 KiB values: panicked %v with %q, want a topic: panic naming MaxBufferBytes", n, panicked, msg)
	}
	wantNoSubscriptions(t, &b)

	// At the bound itself a subscription is made (of empty values, which
	// take no memory however many).
	_, cancel := b.Subscribe(topic.Buffer[struct{}](topic.MaxBuffer))
	cancel()
	_, cancel = b.Subscribe(topic.Buffer[byte](1 << 20))
	cancel()
}
