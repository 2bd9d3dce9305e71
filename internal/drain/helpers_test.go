package drain

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
	"github.com/relayq/relayq/smtptest"
	"github.com/relayq/relayq/submission"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// node is a relayq without its process: a queue file, a delivery engine
// whose next hop is down, a submission server, and the Drainer over them.
type node struct {
	store  *queue.Store
	eng    *delivery.Engine
	srv    *submission.Server
	addr   string // submission listener
	drain  *Drainer
	policy queue.Policy
}

// newNode starts a node; its next hop refuses connections.
func newNode(t *testing.T, mod func(*Options)) *node {
	t.Helper()
	st := queuetest.NewStore(t, nil)
	pol := queue.Policy{Backoff: queue.Backoff{Initial: time.Hour, Multiplier: 2, Max: 4 * time.Hour}, MaxAttempts: 20, MaxAge: 72 * time.Hour}
	eng, err := delivery.New(delivery.Options{
		Store: st, Router: route.NewRouter(route.Options{Routes: map[string]string{"*": smtptest.DownAddr(t)}}),
		Courier: &smtpclient.Dialer{TLS: smtpclient.TLSNone, ConnectTimeout: 2 * time.Second}, Policy: pol,
		Hostname: "a.test", Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { eng.Run(ctx, time.Second); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	srv, err := submission.New(submission.Options{
		Hostname: "a.test", Queue: st, Logger: quiet,
		Policy: submission.Policy{Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	la, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Store: st, Engine: eng, Intake: srv, Hostname: "a.test", Logger: quiet, CommandTimeout: 10 * time.Second}
	if mod != nil {
		mod(&o)
	}
	n := &node{store: st, eng: eng, srv: srv, addr: la.String(), drain: New(o), policy: pol}
	t.Cleanup(func() { _, _ = n.drain.Stop(context.Background()) })
	return n
}

// put queues a message directly, as a submission would (first attempt
// made and failed long ago: deferred, due in an hour).
func (n *node) put(t *testing.T, env queue.Envelope, body string) string {
	t.Helper()
	d := n.store.NewDraft()
	if _, err := io.WriteString(d, body); err != nil {
		t.Fatal(err)
	}
	if err := d.Commit(env); err != nil {
		t.Fatal(err)
	}
	id := d.ID()
	var addrs []string
	for _, r := range env.Recipients {
		addrs = append(addrs, r.Address)
	}
	now := time.Now()
	if _, err := n.store.Claim(id, addrs, now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	return id
}

// wait waits for the drain's run to end.
func (n *node) wait(t *testing.T) Progress {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := n.drain.Wait(ctx)
	if err != nil {
		t.Fatalf("drain did not end: %v (%+v)", err, p)
	}
	return p
}

// all lists every message in a store.
func all(t *testing.T, st *queue.Store) []queue.Envelope {
	t.Helper()
	var out []queue.Envelope
	after := ""
	for {
		page, next, err := st.Admin().List(queue.ListOptions{Limit: 1000, After: after})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if next == "" {
			return out
		}
		after = next
	}
}

// bodyOf reads a stored body, prefix included.
func bodyOf(t *testing.T, st *queue.Store, env *queue.Envelope) string {
	t.Helper()
	rc := st.BodyOf(env)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func msg(subject string) string {
	return "From: a@example.org\r\nSubject: " + subject + "\r\nMessage-ID: <" + strings.ReplaceAll(subject, " ", ".") + "@example.org>\r\n\r\nbody\r\n"
}
