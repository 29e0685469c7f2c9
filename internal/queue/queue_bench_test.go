package queue

import (
	"runtime"
	"sync"
	"testing"
)

// BenchmarkHandOff moves b.N values from one goroutine to another that
// takes every one, through a Queue taken in batches and through a buffered
// channel, the floor it is measured against; the putter yields while the
// queue is full, as a channel's sender would wait.
func BenchmarkHandOff(b *testing.B) {
	const capacity = 1024
	b.Run("queue", func(b *testing.B) {
		q := New[int](capacity, NewWaiter(), OnDone)
		var wg sync.WaitGroup
		wg.Go(func() {
			buf := make([]int, 16)
			got := 0
			for got < b.N {
				n := q.Take(buf)
				for range n {
					q.Done(1) // as the handler hands each out
				}
				got += n
				if n == 0 {
					if w := sleep(q); w != nil {
						<-w
					}
				}
			}
		})
		for i := range b.N {
			for !q.Put(i) {
				runtime.Gosched()
			}
		}
		wg.Wait()
	})
	b.Run("channel", func(b *testing.B) {
		ch := make(chan int, capacity)
		var wg sync.WaitGroup
		wg.Go(func() {
			for range b.N {
				<-ch
			}
		})
		for i := range b.N {
			ch <- i
		}
		wg.Wait()
	})
}
