package delivery

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
)

// tlsCourier delivers through next and says the connection was secured
// as info says, as smtpclient does for a DANE or MTA-STS hop; its idle
// connections are next's.
type tlsCourier struct {
	next Courier
	info smtpclient.TLSInfo
}

func (c tlsCourier) DeliverHeld(ctx context.Context, hops []smtpclient.Hop, env smtpclient.Envelope, body func() (io.ReadCloser, error), h smtpclient.Hold, idle *smtpclient.Idle) []smtpclient.RcptResult {
	res := c.next.DeliverHeld(ctx, hops, env, body, h, idle)
	for i := range res {
		res[i].TLS = c.info
	}
	return res
}

func (c tlsCourier) TakeIdle(match func(smtpclient.Hold) bool) (*smtpclient.Idle, smtpclient.Hold) {
	return c.next.TakeIdle(match)
}

func (c tlsCourier) CloseIdle(match func(smtpclient.Hold) bool) bool { return c.next.CloseIdle(match) }

func (c tlsCourier) Close() { c.next.Close() }

type tlsResults struct {
	mu  sync.Mutex
	got []string
}

func (r *tlsResults) Record(domain string, _ time.Time, res queue.TLSResult) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, domain+" "+res.Policy+" "+res.MX+" "+res.Failure)
	return nil
}

// The delivery log line names the TLS policy and version, and a testing
// mode failure; DANE and MTA-STS results are recorded for TLS-RPT once per
// attempt.
func TestDeliveryLogSaysTLSPolicy(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	rec := &tlsResults{}
	r := newRig(t, nil, func(o *Options) {
		o.Courier = tlsCourier{next: o.Courier, info: smtpclient.TLSInfo{
			Policy: smtpclient.PolicyMTASTS, Version: "TLSv1.3", Failure: smtpclient.FailMXMismatch, Testing: true}}
		o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
		o.TLSReport = rec
	})
	r.submit("app@example.org", "bob@example.net", "carol@example.net")
	r.expectOutcomes(2)
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if n := strings.Count(out, "tls=mta-sts tls_version=TLSv1.3 tls_would_fail=mx-mismatch"); n != 2 {
		t.Fatalf("%d delivery lines name the TLS policy, want 2:\n%s", n, out)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.got) != 1 || !strings.HasPrefix(rec.got[0], "example.net sts ") || !strings.HasSuffix(rec.got[0], " mx-mismatch") {
		t.Fatalf("TLS-RPT records %q", rec.got)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
