package httpsubmit

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/dkim"
	"github.com/relayq/relayq/internal/dkim/dkimtest"
	"github.com/relayq/relayq/submission"
)

// withDKIM gives a submission Signer with an Ed25519 key for example.org,
// as relayq serve configures one, and the DNS records that publish it.
func withDKIM(t *testing.T) (func(submission.KeyFilter) submission.MessageSigner, dkimtest.Records) {
	t.Helper()
	k, err := dkim.GenerateKey(dkim.KeyEd25519, 0)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := dkim.RecordValue(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	s := dkim.NewSigner(dkim.Config{Keys: []dkim.Key{{Domain: "example.org", Selector: "sel", Signer: k}}})
	return func(allow submission.KeyFilter) submission.MessageSigner { return s.BeginWith(dkim.KeyFilter(allow)) }, dkimtest.Records{"sel._domainkey.example.org": rec}
}

// With a DKIM key for the From: domain, mail submitted over HTTP is signed
// as SMTP mail is: raw and JSON-built messages reach the next hop with a
// signature that verifies (go-msgauth and dkimpy), over the relay's
// Received field too.
func TestHTTPSubmissionSigned(t *testing.T) {
	signer, recs := withDKIM(t)
	e := start(t, envOpts{trusted: true, signer: signer})
	if r := e.post(t, "", "message/rfc822", "", []byte(rawMsg)); r.status != http.StatusAccepted {
		t.Fatalf("raw: status %d %+v", r.status, r.err)
	}
	if r := postJSON(t, e, "", map[string]any{"from": "App <app@example.org>", "to": []string{"b@example.net"}, "subject": "json", "text": "hello\n"}); r.status != http.StatusAccepted {
		t.Fatalf("json: status %d %+v", r.status, r.err)
	}
	for _, got := range e.mx.WaitMessages(t, 2, 10*time.Second) {
		if !bytes.HasPrefix(got.Data, []byte("DKIM-Signature:")) {
			t.Fatalf("delivered message is not signed:\n%.400s", got.Data)
		}
		if !bytes.Contains(got.Data, []byte("(relayq) with HTTP id ")) {
			t.Errorf("no HTTP Received field:\n%.600s", got.Data)
		}
		dkimtest.Verify(t, got.Data, recs)
	}
}

// A message that cannot be signed is refused like a storage failure (503,
// 4.3.0, Retry-After) and is not queued unsigned. (The key here is one
// DKIM has no algorithm for, so every signature for example.org fails.)
func TestHTTPSigningFailureRefused(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := dkim.NewSigner(dkim.Config{Keys: []dkim.Key{{Domain: "example.org", Selector: "sel", Signer: k}}})
	e := start(t, envOpts{trusted: true, signer: func(allow submission.KeyFilter) submission.MessageSigner { return s.BeginWith(dkim.KeyFilter(allow)) }})
	r := e.post(t, "", "message/rfc822", "", []byte(rawMsg))
	if r.status != http.StatusServiceUnavailable || r.err.Code != "4.3.0" || r.header.Get("Retry-After") == "" {
		t.Fatalf("unsignable message: %d %+v, want 503 4.3.0 with Retry-After", r.status, r.err)
	}
	if n := e.obs.accepted.Load(); n != 0 {
		t.Fatalf("%d messages accepted after a signing failure", n)
	}
}
