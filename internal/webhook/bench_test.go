package webhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/relayq/relayq/queue"
)

// BenchmarkMailWithWebhook measures what the queue does for mail — accept
// (commit with its queued event) and record the delivery (with its
// delivered event) — from 20 goroutines, with no webhook, a webhook that
// answers at once, and one that never answers. A hanging endpoint must not
// lower msgs/s: its sender holds one request and waits.
//
//	go test -run XXX -bench MailWithWebhook ./webhook/
func BenchmarkMailWithWebhook(b *testing.B) {
	for _, mode := range []string{"none", "ok", "hanging"} {
		b.Run(mode, func(b *testing.B) {
			st, err := queue.Open(filepath.Join(b.TempDir(), "q.db"), queue.Options{Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			if mode != "none" {
				hang := make(chan struct{})
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if mode == "hanging" {
						select {
						case <-hang:
						case <-r.Context().Done():
						}
						return
					}
					w.WriteHeader(http.StatusNoContent)
				}))
				defer srv.Close()
				defer close(hang)
				go func() {
					Run(ctx, Options{Source: st.Events(), Logger: quiet, Timeout: time.Minute,
						Backoff: queue.Backoff{Initial: time.Second, Multiplier: 2, Max: time.Minute},
						Hooks:   []Hook{{URL: srv.URL, Secret: "k"}}})
					close(done)
				}()
			} else {
				close(done)
			}
			body := []byte("Subject: bench\r\n\r\nhello\r\n")
			b.SetParallelism(10) // 20 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					d := st.NewDraft()
					d.Write(body)
					if err := d.Commit(queue.Envelope{From: "a@example.org", Recipients: []queue.Recipient{{Address: "b@example.net"}}}); err != nil {
						b.Error(err)
						return
					}
					if _, err := st.Record(d.ID(), []queue.Outcome{{Address: "b@example.net", Status: queue.StatusDelivered, Reply: "250 2.0.0 ok", RemoteMTA: "mx.example.net"}}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			b.StopTimer()
			cancel()
			<-done
		})
	}
}
