package topic_test

import (
	"context"
	"fmt"
	"time"

	"github.com/seedaa7df82c/topic"
)

// A slow subscriber that follows the log loses nothing the log keeps, where
// a subscription that is sent to loses what its buffer cannot hold.
func ExampleFollow() {
	type Order struct{ ID int }
	var b topic.Broker
	b.Retain[Order](topic.Retention{Count: 1000})

	sent, cancelSent := b.Subscribe(topic.Buffer[Order](1), topic.Name[Order]("sent to"))
	defer cancelSent()
	followed, cancelFollowed := b.Subscribe(topic.Follow[Order](), topic.Buffer[Order](1), topic.Name[Order]("follower"))
	defer cancelFollowed()

	for id := 1; id <= 5; id++ {
		b.Publish(Order{id}) // nobody receives meanwhile
	}
	fmt.Println("sent to, received:", len(takeAll(sent)))
	var ids []int
	for range 5 {
		o := <-followed // the follower waits for room, not the publisher
		ids = append(ids, o.ID)
	}
	fmt.Println(ids)
	for _, st := range b.Subscriptions() {
		fmt.Printf("%s: lost %d\n", st.Name, st.Lost.Total())
	}
	// Output:
	// sent to, received: 1
	// [1 2 3 4 5]
	// follower: lost 0
	// sent to: lost 4
}

// A follower that falls behind retention jumps to the oldest value kept, and
// is told how many values it missed, where they are missing.
func ExampleFollower_Read() {
	type Tick struct{ N int }
	var b topic.Broker
	b.Retain[Tick](topic.Retention{Count: 3})
	f := b.Follow(topic.Replay[Tick](topic.Earliest()),
		topic.OnLoss(func(l topic.Loss[Tick]) {
			fmt.Printf("skipped offsets %d to %d\n", l.Offset, l.Offset+l.Count-1)
		}))
	defer f.Close()

	for n := range 8 {
		b.Publish(Tick{n}) // only the last 3 are kept
	}
	buf := make([]topic.Record[Tick], 10)
	for _, r := range buf[:f.Read(buf)] {
		fmt.Printf("offset %d, value %d, skipped before it %d\n", r.Offset, r.Value.N, r.Skipped)
	}
	// Output:
	// skipped offsets 0 to 4
	// offset 5, value 5, skipped before it 5
	// offset 6, value 6, skipped before it 0
	// offset 7, value 7, skipped before it 0
}

// A named follower commits what it has handled; started again under its
// name, it resumes after its last commit.
func ExampleBroker_Follow() {
	type Invoice struct{ ID int }
	var b topic.Broker
	b.Retain[Invoice](topic.Retention{Count: 100})
	for id := 1; id <= 5; id++ {
		b.Publish(Invoice{id})
	}

	f := b.Follow(topic.Name[Invoice]("billing"), topic.Replay[Invoice](topic.Earliest()))
	buf := make([]topic.Record[Invoice], 2)
	n := f.Read(buf) // invoices 1 and 2
	f.Commit(buf[n-1].Offset)
	f.Close() // the process stops, say

	again := b.Follow(topic.Name[Invoice]("billing"), topic.Replay[Invoice](topic.Earliest()))
	defer again.Close()
	for {
		r, err := again.Next(context.Background())
		if err != nil {
			break
		}
		fmt.Println("invoice", r.Value.ID)
		if r.Value.ID == 5 {
			break
		}
	}
	// Output:
	// invoice 3
	// invoice 4
	// invoice 5
}

// Pull with commit: what is read and not committed in time is read again,
// at least once.
func ExampleAckWait() {
	type Job struct{ ID int }
	var b topic.Broker
	b.Retain[Job](topic.Retention{Count: 100})
	for id := 1; id <= 3; id++ {
		b.Publish(Job{id})
	}
	f := b.Follow(topic.Name[Job]("workers"), topic.Replay[Job](topic.Earliest()),
		topic.AckWait[Job](10*time.Millisecond))
	defer f.Close()

	buf := make([]topic.Record[Job], 10)
	n := f.Read(buf)
	fmt.Println("read", n, "jobs; job 1 done, the worker dies with 2 and 3")
	f.Commit(buf[0].Offset)

	time.Sleep(20 * time.Millisecond)
	for _, r := range buf[:f.Read(buf)] {
		fmt.Println("read again: job", r.Value.ID)
	}
	// Output:
	// read 3 jobs; job 1 done, the worker dies with 2 and 3
	// read again: job 2
	// read again: job 3
}

// Seek moves a live follower, here by its name, from another part of the
// program.
func ExampleBroker_Seek() {
	type Event struct{ N int }
	var b topic.Broker
	b.Retain[Event](topic.Retention{Count: 100})
	f := b.Follow(topic.Name[Event]("projection"))
	defer f.Close()
	for n := range 5 {
		b.Publish(Event{n})
	}
	buf := make([]topic.Record[Event], 10)
	fmt.Println("read", f.Read(buf))

	b.Seek[Event]("projection", 3) // rebuild from offset 3
	for _, r := range buf[:f.Read(buf)] {
		fmt.Println("again:", r.Value.N)
	}
	// Output:
	// read 5
	// again: 3
	// again: 4
}

// A log of the latest value per key: a late subscriber gets the current
// price of every SKU, not the history of changes.
func ExampleBroker_RetainLatest() {
	type Price struct {
		SKU   string
		Cents int
	}
	var b topic.Broker
	b.RetainLatest(func(p Price) string { return p.SKU }, topic.Retention{Count: 10000})

	b.Publish(Price{"apple", 50})
	b.Publish(Price{"pear", 70})
	b.Publish(Price{"apple", 45})
	b.Publish(Price{"plum", 30})
	b.Publish(Price{"pear", 75})

	late, cancel := b.Subscribe(topic.Buffer[Price](16), topic.Replay[Price](topic.Earliest()))
	defer cancel()
	for _, p := range takeAll(late) {
		fmt.Println(p.SKU, p.Cents)
	}
	// Output:
	// apple 45
	// plum 30
	// pear 75
}

// A handler that follows the log: with Retry, the values after a failing
// one wait in the log, however long the retries take, instead of a queue
// that would overflow.
func ExampleBroker_Handle_follow() {
	type Order struct{ ID int }
	var b topic.Broker
	b.Retain[Order](topic.Retention{Count: 10000})
	failures := 2
	b.Handle(func(ctx context.Context, o Order) error {
		if o.ID == 2 && failures > 0 {
			failures--
			return fmt.Errorf("order %d: payment service unavailable", o.ID)
		}
		return nil
	}, topic.Follow[Order](), topic.Name[Order]("payments"),
		topic.Retry[Order](topic.RetryPolicy{Attempts: 5, Base: time.Millisecond}))

	for id := 1; id <= 3000; id++ {
		b.Publish(Order{id})
	}
	_ = b.Shutdown(context.Background()) // drains the handler to the end of the log
	st := b.Subscriptions()[0]
	fmt.Printf("handled %d, retried %d, lost %d\n", st.Handler.Handled, st.Handler.Retried, st.Lost.Total())
	// Output:
	// handled 3000, retried 2, lost 0
}

// Next waits for the next record; Wait only for one to be there. A Context
// bounds either.
func ExampleFollower_Next() {
	type Tick struct{ N int }
	var b topic.Broker
	b.Retain[Tick](topic.Retention{Count: 10})
	f := b.Follow[Tick]()
	defer f.Close()
	go func() {
		for n := range 3 {
			b.Publish(Tick{n})
		}
	}()
	for range 3 {
		r, err := f.Next(context.Background())
		if err != nil {
			return
		}
		fmt.Printf("offset %d: tick %d\n", r.Offset, r.Value.N)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	fmt.Println("nothing more:", f.Wait(ctx))
	f.Close()
	_, err := f.Next(context.Background())
	fmt.Println("closed:", err)
	// Output:
	// offset 0: tick 0
	// offset 1: tick 1
	// offset 2: tick 2
	// nothing more: context deadline exceeded
	// closed: topic: follower closed
}

// Committed tells where a named follower stands; Offset where it reads next.
func ExampleFollower_Commit() {
	type Job struct{ ID int }
	var b topic.Broker
	b.Retain[Job](topic.Retention{Count: 10})
	for id := range 4 {
		b.Publish(Job{id})
	}
	f := b.Follow(topic.Name[Job]("worker"), topic.Replay[Job](topic.Earliest()))
	defer f.Close()
	_, ok := f.Committed()
	fmt.Println("committed at first:", ok)
	buf := make([]topic.Record[Job], 3)
	n := f.Read(buf)
	f.Commit(buf[n-1].Offset)
	c, _ := f.Committed()
	fmt.Printf("read %d, committed up to offset %d, next offset %d\n", n, c, f.Offset())
	// Output:
	// committed at first: false
	// read 3, committed up to offset 2, next offset 3
}

// Next starts a replay with the next publication: no replay, the default.
// The other starts give the log's past first.
func ExampleNext() {
	var b topic.Broker
	b.Retain[int](topic.Retention{Count: 10})
	b.Publish(1)
	b.Publish(2)
	from := func(s topic.Start) []int {
		f := b.Follow(topic.Replay[int](s))
		defer f.Close()
		buf := make([]topic.Record[int], 10)
		var got []int
		for _, r := range buf[:f.Read(buf)] {
			got = append(got, r.Value)
		}
		return got
	}
	fmt.Println("Next:", from(topic.Next()), "Earliest:", from(topic.Earliest()), "Last(1):", from(topic.Last(1)), "At(1):", from(topic.At(1)))
	// Output:
	// Next: [] Earliest: [1 2] Last(1): [2] At(1): [2]
}

// A follower reads the log of a retained type at its own pace, here in
// batches of two, long after the values were published: the publisher never
// waited for it.
func ExampleFollower() {
	type Event struct{ N int }
	var b topic.Broker
	b.Retain[Event](topic.Retention{Count: 100})
	f := b.Follow[Event]()
	defer f.Close()

	for n := range 5 {
		b.Publish(Event{n})
	}

	buf := make([]topic.Record[Event], 2)
	for n := f.Read(buf); n > 0; n = f.Read(buf) {
		var batch []int
		for _, r := range buf[:n] {
			batch = append(batch, r.Value.N)
		}
		fmt.Println("batch", batch)
	}
	// Output:
	// batch [0 1]
	// batch [2 3]
	// batch [4]
}

// Close ends a follower: Next returns ErrClosed and it leaves Subscriptions.
// Its name is free again, and a new follower under it resumes after what the
// first committed.
func ExampleFollower_Close() {
	type Job struct{ ID int }
	var b topic.Broker
	b.Retain[Job](topic.Retention{Count: 100})
	for id := 1; id <= 3; id++ {
		b.Publish(Job{id})
	}

	f := b.Follow(topic.Name[Job]("worker"), topic.Replay[Job](topic.Earliest()))
	r, _ := f.Next(context.Background())
	f.Commit(r.Offset)
	f.Close()
	_, err := f.Next(context.Background())
	fmt.Println(err, "- subscriptions:", len(b.Subscriptions()))

	again := b.Follow(topic.Name[Job]("worker"), topic.Replay[Job](topic.Earliest()))
	defer again.Close()
	r, _ = again.Next(context.Background())
	fmt.Println("resumed at job", r.Value.ID)
	// Output:
	// topic: follower closed - subscriptions: 0
	// resumed at job 2
}

// Committed tells a follower started again under its name where the one
// before it stopped.
func ExampleFollower_Committed() {
	type Doc struct{ ID int }
	var b topic.Broker
	b.Retain[Doc](topic.Retention{Count: 100})
	for id := range 5 {
		b.Publish(Doc{id})
	}

	first := b.Follow(topic.Name[Doc]("indexer"), topic.Replay[Doc](topic.Earliest()))
	buf := make([]topic.Record[Doc], 3)
	n := first.Read(buf)
	first.Commit(buf[n-1].Offset)
	first.Close()

	again := b.Follow(topic.Name[Doc]("indexer"))
	defer again.Close()
	c, ok := again.Committed()
	fmt.Printf("committed up to %d (%t), reads %d next\n", c, ok, again.Offset())
	// Output:
	// committed up to 2 (true), reads 3 next
}

// Offset is the offset a follower reads next: without Replay, that of the
// next value published.
func ExampleFollower_Offset() {
	var b topic.Broker
	b.Retain[string](topic.Retention{Count: 100})
	b.Publish("a")
	b.Publish("b")

	f := b.Follow[string]()
	defer f.Close()
	fmt.Println("starts at", f.Offset())

	b.Publish("c")
	b.Publish("d")
	f.Read(make([]topic.Record[string], 1))
	fmt.Println("after reading one:", f.Offset())
	// Output:
	// starts at 2
	// after reading one: 3
}

// Seek moves a follower back to read values again, or ahead past values it
// need not read: past the end of the log, it waits for that offset.
func ExampleFollower_Seek() {
	var b topic.Broker
	b.Retain[int](topic.Retention{Count: 100})
	f := b.Follow[int]()
	defer f.Close()
	read := func() (got []int) {
		buf := make([]topic.Record[int], 10)
		for _, r := range buf[:f.Read(buf)] {
			got = append(got, r.Value)
		}
		return got
	}

	for n := range 3 {
		b.Publish(n)
	}
	fmt.Println("read", read())
	f.Seek(1)
	fmt.Println("back to 1:", read())

	f.Seek(5) // the log ends at 3
	for n := 3; n < 7; n++ {
		b.Publish(n)
	}
	fmt.Println("ahead to 5:", read())
	// Output:
	// read [0 1 2]
	// back to 1: [1 2]
	// ahead to 5: [5 6]
}

// Wait blocks until a record can be read, so a reader that takes batches
// sleeps between them instead of polling; once the follower is closed, it
// returns ErrClosed.
func ExampleFollower_Wait() {
	var b topic.Broker
	b.Retain[int](topic.Retention{Count: 100})
	f := b.Follow[int]()
	go func() {
		for n := range 5 {
			b.Publish(n)
		}
	}()

	buf := make([]topic.Record[int], 10)
	var got []int
	for len(got) < 5 {
		if err := f.Wait(context.Background()); err != nil {
			fmt.Println(err)
			return
		}
		for _, r := range buf[:f.Read(buf)] {
			got = append(got, r.Value)
		}
	}
	fmt.Println(got)

	f.Close()
	fmt.Println(f.Wait(context.Background()))
	// Output:
	// [0 1 2 3 4]
	// topic: follower closed
}

// A follower's stats are its position: the offset it reads next, the
// offsets committed (those below Committed), and its lag, the values kept
// that it has yet to read.
func ExampleFollowerStats() {
	type Job struct{ ID int }
	var b topic.Broker
	b.Retain[Job](topic.Retention{Count: 100})
	f := b.Follow(topic.Name[Job]("worker"), topic.Replay[Job](topic.Earliest()))
	defer f.Close()
	for id := range 10 {
		b.Publish(Job{id})
	}

	buf := make([]topic.Record[Job], 4)
	f.Read(buf)
	f.Commit(buf[1].Offset) // jobs 2 and 3 are still in hand

	st := b.Subscriptions()[0].Follower
	fmt.Printf("offset %d, committed %d, lag %d\n", st.Offset, st.Committed, st.Lag)
	// Output:
	// offset 4, committed 2, lag 6
}
