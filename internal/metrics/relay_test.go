package metrics

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
	"github.com/relayq/relayq/smtptest"
)

// A real relay path (queue, delivery engine, a fake next hop) wired to
// the metrics as cmd/relayq wires it: after one delivery, one deferral and
// one bounce, a scrape shows each counter moved.
func TestScrapeAfterDeliveryDeferralAndBounce(t *testing.T) {
	srv := smtptest.NewServer(t,
		smtptest.Reply("rcpt:later@=451 4.3.0 Try later"),
		smtptest.Reply("rcpt:nobody@=550 5.1.1 No such user"))
	st := queuetest.NewStore(t, nil)
	m := New()
	m.WatchQueue(st.Stats)
	seen := tee{Observer: m.Delivery(), ch: make(chan string, 10)}
	eng, err := delivery.New(delivery.Options{
		Store:    st,
		Router:   route.NewRouter(route.Options{Routes: map[string]string{"*": srv.Addr()}}),
		Courier:  &smtpclient.Dialer{Hostname: "relay.test", TLS: "none"},
		Policy:   queue.Policy{Backoff: queue.Backoff{Initial: time.Hour, Multiplier: 2, Max: time.Hour}},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Observer: seen,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { eng.Run(ctx, time.Second); close(done) }()
	defer func() { cancel(); <-done }()

	d := st.NewDraft()
	fmt.Fprint(d, "Subject: metrics\r\n\r\nx\r\n")
	// From <> so the bounce makes no report of its own to count.
	env := queue.Envelope{Recipients: []queue.Recipient{{Address: "ok@example.net"}, {Address: "later@example.net"}, {Address: "nobody@example.net"}}}
	if err := d.Commit(env); err != nil {
		t.Fatal(err)
	}
	eng.Kick()
	for i := 0; i < 3; i++ {
		select {
		case <-seen.ch:
		case <-time.After(10 * time.Second):
			t.Fatal("no delivery outcome within 10s")
		}
	}
	body := scrape(t, m)
	wantLines(t, body,
		`relayq_delivery_attempts_total{result="delivered"} 1`,
		`relayq_delivery_attempts_total{result="deferred"} 1`,
		`relayq_delivery_attempts_total{result="bounced"} 1`,
		`relayq_queue_recipients{state="deferred"} 1`,
		`relayq_queue_messages 1`,
	)
	if t.Failed() {
		t.Logf("scrape:\n%s", grep(body, "relayq_delivery_attempts_total", "relayq_queue_"))
	}
}

// tee passes delivery events to the metrics and tells the test.
type tee struct {
	delivery.Observer
	ch chan string
}

func (t tee) Attempted(status queue.Status, took time.Duration) {
	t.Observer.Attempted(status, took)
	t.ch <- string(status)
}

func grep(body string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}
