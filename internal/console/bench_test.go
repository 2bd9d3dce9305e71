package console

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// benchQueued is the queue size the console must stay usable at: a
// backlog an incident can build, when the console is most needed.
const benchQueued = 100_000

var (
	benchOnce sync.Once
	benchSite *site
)

// bigSite is one site with 100,000 queued messages, shared by the page
// benchmarks (filling it is the slow part, not what is measured).
func bigSite(b *testing.B) *site {
	benchOnce.Do(func() {
		benchSite = newSite(&benchTB{TB: b}, Options{Loopback: true})
		benchSite.fill(benchQueued)
	})
	return benchSite
}

// benchTB keeps the shared site past the first benchmark's cleanup: its
// files live in the first benchmark's TempDir until the process ends.
type benchTB struct{ testing.TB }

func (benchTB) Cleanup(func()) {}

// benchPage renders path through the real handler b.N times.
func benchPage(b *testing.B, path, want string) {
	s := bigSite(b)
	h := s.srv.Config.Handler
	cookie := ""
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		req, _ := http.NewRequest("GET", "http://127.0.0.1"+path, nil)
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		w := &recorder{header: http.Header{}}
		h.ServeHTTP(w, req)
		if w.code != http.StatusOK || !strings.Contains(w.body.String(), want) {
			b.Fatalf("GET %s: %d %s", path, w.code, w.body.String())
		}
		if c := w.header.Get("Set-Cookie"); c != "" {
			cookie, _, _ = strings.Cut(c, ";")
		}
		_, _ = io.Discard.Write(w.body.Bytes())
	}
}

// The first page of the queue (50 messages) at 100,000 queued.
func BenchmarkMessagesPage100k(b *testing.B) { benchPage(b, "/ui/messages", `id="next"`) }

// A page deep in the queue, by the API's cursor.
func BenchmarkMessagesFilteredPage100k(b *testing.B) {
	benchPage(b, "/ui/messages?domain=example.net&status=queued", `id="next"`)
}

// The overview's counts at 100,000 queued.
func BenchmarkOverview100k(b *testing.B) { benchPage(b, "/", `id="n-queued">100000<`) }

// The destinations page (the queue's shape) at 100,000 queued.
func BenchmarkDestinations100k(b *testing.B) { benchPage(b, "/ui/destinations", "example.net") }
