package httpsubmit

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// BenchmarkJSONAPIs posts the same small JSON message through relayq's own
// API and through Postmark's endpoint, with an API key, into a real queue
// file (acceptance only, as BenchmarkRawSubmission). The budget is the
// Postmark endpoint within 10 % of relayq's own API: the translation is a
// strict decode and a copy, the rest of the path is shared. Run with
// -count=1 three times to alternate them.
func BenchmarkJSONAPIs(b *testing.B) {
	for _, api := range []struct {
		name, path, auth, value string
		status                  int
		body                    func(n int64) string
	}{
		{"own", Path, "Authorization", "Bearer " + espKey, http.StatusAccepted, func(n int64) string {
			return fmt.Sprintf(`{"from":"app@example.org","to":["rcpt@example.net"],"subject":"bench %d","text":"benchmark filler","html":"<p>benchmark filler</p>"}`, n)
		}},
		{"postmark", PostmarkPath, "X-Postmark-Server-Token", espKey, http.StatusOK, func(n int64) string {
			return fmt.Sprintf(`{"From":"app@example.org","To":"rcpt@example.net","Subject":"bench %d","TextBody":"benchmark filler","HtmlBody":"<p>benchmark filler</p>"}`, n)
		}},
	} {
		b.Run(api.name, func(b *testing.B) {
			url := benchServer(b) + api.path
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			var seq atomic.Int64
			post := func() error {
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(api.body(seq.Add(1)))))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(api.auth, api.value)
				resp, err := client.Do(req)
				if err != nil {
					return err
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != api.status {
					return fmt.Errorf("status %s: %s", resp.Status, body)
				}
				return nil
			}
			// One request first: the key's bcrypt check is then
			// remembered and not part of the measure.
			if err := post(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetParallelism(10)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := post(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// benchServer is a submission server with one API key on a fresh queue
// file; it returns the listener's base URL.
func benchServer(b *testing.B) string {
	st, err := queue.Open(filepath.Join(b.TempDir(), "q.db"), queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sub, err := submission.New(submission.Options{
		Hostname: "relay.test", Queue: st, Logger: log, AllowInsecureAuth: true, MaxConnsPerIP: 1000,
		// Every key check, a remembered one too, holds a guess of the
		// AUTH limit while it runs; 20 parallel clients of one address
		// would be locked out at the default of 5.
		AuthMaxFailures: 1000,
		Policy:          submission.Policy{APIKeys: []submission.APIKey{{Name: "app", KeyHash: benchHash(b)}}},
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
	return "http://" + addr.String()
}

func benchHash(b *testing.B) string {
	h, err := bcrypt.GenerateFromPassword([]byte(espKey), bcrypt.MinCost)
	if err != nil {
		b.Fatal(err)
	}
	return string(h)
}
