package httpsubmit

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// BenchmarkRawSubmission posts 1 KiB raw messages over keep-alive
// connections from parallel clients into a real queue file, as relaybench's
// scenario h does (no delivery engine: only the acceptance path). Compare
// its CPU and allocations per message with the SMTP path's; the budget is
// "HTTP at least as fast as SMTP", since HTTP does less work per message.
func BenchmarkRawSubmission(b *testing.B) {
	st, err := queue.Open(filepath.Join(b.TempDir(), "q.db"), queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sub, err := submission.New(submission.Options{
		Hostname: "relay.test", Queue: st, Logger: log,
		Policy: submission.Policy{Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
	})
	if err != nil {
		b.Fatal(err)
	}
	srv := New(Options{Acceptor: sub.Acceptor(), Logger: log})
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	url := "http://" + addr.String() + Path
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	body := strings.Repeat("benchmark filler 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTU.\r\n", 10)
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(10) // 20 clients on 2 cores, like scenario h
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			msg := fmt.Sprintf("From: <app@example.org>\r\nTo: <rcpt@example.net>\r\nSubject: bench %d\r\n"+
				"Date: Mon, 30 Nov 2026 12:00:00 +0000\r\nMessage-ID: <%d@bench.test>\r\n\r\n%s", n, n, body)
			resp, err := client.Post(url, "message/rfc822", bytes.NewReader([]byte(msg)))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				b.Errorf("status %s", resp.Status)
				return
			}
		}
	})
}
