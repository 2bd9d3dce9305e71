package submission

import (
	"strings"
	"sync"
	"testing"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/internal/preflight"
)

type testLinks struct{}

func (testLinks) Link(s identity.Sender, id, rcpt string) (string, error) {
	return "https://unsub.example.org/u/" + id + "/" + rcpt, nil
}

type warnCounter struct {
	Observer
	mu sync.Mutex
	n  map[string]int
}

func (w *warnCounter) PreflightWarned(stream, check string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n[check]++
}

type nopObserver struct{}

func (nopObserver) SessionOpened()        {}
func (nopObserver) SessionClosed()        {}
func (nopObserver) Accepted(int64)        {}
func (nopObserver) Rejected(RejectReason) {}

// A stream that refuses unaligned mail answers 550 5.7.22 naming the check
// and the fix, and queues nothing; mail from the key's domain is queued.
func TestPreflightRefusesUnaligned(t *testing.T) {
	mod, _ := withSigner(t)
	pf := preflight.New(preflight.Options{KeyDomains: []string{"example.org"},
		Streams: map[string]preflight.Checks{"": {DKIMAlignment: preflight.Refuse}}})
	env := startServer(t, func(o *Options) { mod(o); o.Preflight = pf })
	c := dial(t, env.addr)
	_, err := send(c, "app@example.net", []string{"b@example.net"}, "From: app@example.net\r\nSubject: x\r\n\r\nhi\r\n")
	if smtpCode(err) != 550 || enhanced(err) != "5.7.22" || !strings.Contains(err.Error(), "dkim.keys entry for example.net") {
		t.Fatalf("unaligned From: %v", err)
	}
	env.wantQueued(t, 0, "a refused message")
	if _, err := send(c, "app@example.net", []string{"b@example.net"}, "From: app@news.example.org\r\n\r\nhi\r\n"); err != nil {
		t.Fatalf("aligned (relaxed) From: %v", err)
	}
	env.wantQueued(t, 1, "an aligned message")
}

// one_click: add writes List-Unsubscribe and List-Unsubscribe-Post into a
// message without them, before the signer sees the header section's end:
// the stored message carries them and its signature covers both.
func TestPreflightAddsSignedOneClick(t *testing.T) {
	mod, recs := withSigner(t)
	pf := preflight.New(preflight.Options{KeyDomains: []string{"example.org"}, Links: testLinks{},
		Streams: map[string]preflight.Checks{"": {OneClick: preflight.Add}}})
	env := startServer(t, func(o *Options) { mod(o); o.Preflight = pf })
	c := dial(t, env.addr)
	reply, err := send(c, "app@example.org", []string{"b@example.net"}, "From: app@example.org\r\nSubject: news\r\n\r\nhi\r\n")
	if err != nil {
		t.Fatal(err)
	}
	id := queueIDFrom(t, reply)
	stored := readBody(t, env.store, id)
	want := "List-Unsubscribe: <https://unsub.example.org/u/" + id + "/b@example.net>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"
	if !strings.Contains(stored, want) {
		t.Fatalf("no one-click fields in\n%s", stored)
	}
	dkimtest.Verify(t, []byte(stored), recs)
	sig, _, _ := strings.Cut(stored, "\r\nFrom:")
	if h := strings.ToLower(strings.Join(strings.Fields(sig), "")); !strings.Contains(h, "list-unsubscribe:list-unsubscribe-post") {
		t.Errorf("signature does not cover both fields: %s", sig)
	}
	// Two recipients cannot share one recipient's link: refused.
	_, err = send(c, "app@example.org", []string{"b@example.net", "c@example.net"}, "From: app@example.org\r\n\r\nhi\r\n")
	if smtpCode(err) != 550 || !strings.Contains(err.Error(), "one recipient per message") {
		t.Fatalf("two recipients: %v", err)
	}
}

// warn queues the message and counts the check.
func TestPreflightWarns(t *testing.T) {
	obs := &warnCounter{Observer: nopObserver{}, n: map[string]int{}}
	pf := preflight.New(preflight.Options{Streams: map[string]preflight.Checks{"": {DKIMAlignment: preflight.Warn, OneClick: preflight.Warn}}})
	env := startServer(t, func(o *Options) { o.Preflight = pf; o.Observer = obs })
	c := dial(t, env.addr)
	if _, err := send(c, "app@example.net", []string{"b@example.net"}, "From: app@example.net\r\n\r\nhi\r\n"); err != nil {
		t.Fatal(err)
	}
	env.wantQueued(t, 1, "a warned message")
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.n[preflight.CheckDKIM] != 1 || obs.n[preflight.CheckOneClick] != 1 {
		t.Errorf("warnings counted: %v", obs.n)
	}
}
