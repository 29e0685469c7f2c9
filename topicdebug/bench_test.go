package topicdebug_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/topicdebug"
)

// big returns a broker holding n named subscriptions of one type, which
// the benchmark shuts down when it ends.
func big(b *testing.B, n int) *topic.Broker {
	br := new(topic.Broker)
	b.Cleanup(func() { br.Shutdown(context.Background()) })
	for i := range n {
		br.Subscribe(topic.Name[order](fmt.Sprint("client-", i)))
	}
	return br
}

// discard is a ResponseWriter that drops what it is sent, so that a
// benchmark of the handler measures the handler.
type discard struct{ h http.Header }

func (d discard) Header() http.Header         { return d.h }
func (d discard) Write(p []byte) (int, error) { return len(p), nil }
func (d discard) WriteHeader(int)             {}

// BenchmarkTake takes the snapshot of a broker holding 10,000
// subscriptions.
func BenchmarkTake(b *testing.B) {
	br := big(b, 10000)
	b.ReportAllocs()
	for b.Loop() {
		_ = topicdebug.Take(br)
	}
}

// BenchmarkVar reads the Var of a broker holding 10,000 subscriptions: a
// snapshot and its JSON, as /debug/vars shows it.
func BenchmarkVar(b *testing.B) {
	v := topicdebug.Var(big(b, 10000))
	b.ReportAllocs()
	for b.Loop() {
		_ = v.String()
	}
}

// BenchmarkPageRefresh serves one refresh of the page, a GET of
// snapshot.json, of a broker holding 10,000 subscriptions.
func BenchmarkPageRefresh(b *testing.B) {
	h := topicdebug.Handler(big(b, 10000))
	req := httptest.NewRequest("GET", "/debug/topic/snapshot.json", nil)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(discard{http.Header{}}, req)
	}
}

// BenchmarkPublishPage publishes to a saturated subscription (routing and
// a counted drop) of a broker that holds 10,000 other subscriptions,
// without the page (page=closed), while a goroutine refreshes the page ten
// times a second (page=open, ten times the page's own pace), and in a loop,
// as fast as it can (page=polled): the worst a page open on the broker can
// do to a publisher.
func BenchmarkPublishPage(b *testing.B) {
	for _, mode := range []struct {
		name  string
		every time.Duration // between refreshes; 0 for none, -1 for flat out
	}{
		{"page=closed", 0},
		{"page=open", 100 * time.Millisecond}, // ten times the page's own pace
		{"page=polled", -1},
	} {
		b.Run(mode.name, func(b *testing.B) {
			br := big(b, 10000)
			br.Subscribe(topic.Buffer[int](1)) // never received from
			br.Publish(0)
			var refreshes int
			if mode.every != 0 {
				h := topicdebug.Handler(br)
				req := httptest.NewRequest("GET", "/debug/topic/snapshot.json", nil)
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() {
					var tick <-chan time.Time
					if mode.every > 0 {
						t := time.NewTicker(mode.every)
						defer t.Stop()
						tick = t.C
					}
					for {
						if tick != nil {
							select {
							case <-stop:
								return
							case <-tick:
							}
						}
						select {
						case <-stop:
							return
						default:
						}
						h.ServeHTTP(discard{http.Header{}}, req)
						refreshes++
					}
				})
				defer func() {
					close(stop)
					wg.Wait()
					b.ReportMetric(float64(refreshes)/b.Elapsed().Seconds(), "refreshes/s")
				}()
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				br.Publish(i)
			}
		})
	}
}
