package submission

import (
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/queue"
)

// TestSuppressedRecipientRefusedAtRcpt: a suppressed address gets 550 5.1.1
// naming when and why, the other recipients still go through, and the
// refusal is a suppressed event.
func TestSuppressedRecipientRefusedAtRcpt(t *testing.T) {
	env := startServer(t, func(o *Options) {
		l := &suppression.List{Store: o.Queue.Suppressions()}
		o.Suppressions = l
	})
	since := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	if err := env.store.Suppressions().Add(queue.Suppression{Address: "gone@example.net", Since: since, Reply: "550 5.1.1 no such user"}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, env.addr)
	if err := c.Mail("app@example.org", nil); err != nil {
		t.Fatal(err)
	}
	err := c.Rcpt("Gone@example.net", nil)
	if smtpCode(err) != 550 || enhanced(err) != "5.1.1" {
		t.Fatalf("RCPT to a suppressed address: %v", err)
	}
	if want := "<Gone@example.net>: suppressed since 2026-11-01T08:00:00Z after: 550 5.1.1 no such user"; !strings.Contains(err.Error(), want) {
		t.Errorf("reply %q lacks %q", err, want)
	}
	if err := c.Rcpt("ok@example.net", nil); err != nil {
		t.Fatal(err)
	}
	w, _ := c.Data()
	w.Write([]byte("Subject: hi\r\nMessage-ID: <abc@app>\r\n\r\nx\r\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	evs, _, err := env.store.Events().List(queue.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Type != queue.EventSuppressed || evs[0].Recipient != "Gone@example.net" ||
		evs[0].From != "app@example.org" || evs[0].EnhancedCode != "5.1.1" {
		t.Fatalf("events %+v", evs)
	}
	if evs[1].Type != queue.EventQueued || evs[1].Recipient != "ok@example.net" || evs[1].MessageID != "<abc@app>" {
		t.Errorf("queued event %+v", evs[1])
	}
}

func TestSuppressionExemptsAuthenticatedWhenConfigured(t *testing.T) {
	env := startServer(t, func(o *Options) {
		o.Suppressions = &suppression.List{Store: o.Queue.Suppressions(), Config: suppression.Config{ExemptTrusted: true}}
	})
	env.store.Suppressions().Add(queue.Suppression{Address: "gone@example.net"})
	c := dial(t, env.addr)
	if _, err := send(c, "app@example.org", []string{"gone@example.net"}, "Subject: x\r\n\r\nx\r\n"); err != nil {
		t.Fatalf("trusted client refused despite exempt_trusted: %v", err)
	}
}

// TestMissingHeadersAdded: a trusted client's message without Message-ID
// and Date gets both; one that has them is left alone.
func TestMissingHeadersAdded(t *testing.T) {
	env := startServer(t, func(o *Options) { o.AddMissingHeaders = true })
	c := dial(t, env.addr)
	reply, err := send(c, "app@example.org", []string{"a@example.net"}, "Subject: no ids\r\n\r\nbody\r\n")
	if err != nil {
		t.Fatal(err)
	}
	id := queueIDFrom(t, reply)
	body := readBody(t, env.store, id)
	head, rest, _ := strings.Cut(body, "\r\n\r\n")
	if !strings.Contains(head, "\r\nMessage-ID: <"+id+"@relay.test>\r\n") || !strings.Contains(head, "\r\nDate: ") || rest != "body\r\n" {
		t.Errorf("headers not added in the header section:\n%s", body)
	}
	stored, _ := env.store.Get(id)
	if stored.MessageID != "<"+id+"@relay.test>" || stored.Subject != "no ids" {
		t.Errorf("envelope message_id %q subject %q", stored.MessageID, stored.Subject)
	}
	reply, err = send(c, "app@example.org", []string{"a@example.net"}, "Date: Mon, 30 Nov 2026 12:00:00 +0000\r\nMessage-ID: <mine@app>\r\nSubject: has\r\n  folded\r\n\r\nbody\r\n")
	if err != nil {
		t.Fatal(err)
	}
	id = queueIDFrom(t, reply)
	body = readBody(t, env.store, id)
	if strings.Count(body, "Message-ID:") != 1 || strings.Count(body, "Date:") != 1 {
		t.Errorf("headers added though present:\n%s", body)
	}
	if stored, _ := env.store.Get(id); stored.MessageID != "<mine@app>" || stored.Subject != "has  folded" {
		t.Errorf("envelope message_id %q subject %q", stored.MessageID, stored.Subject)
	}
}

func TestHeadersLeftAloneWhenOff(t *testing.T) {
	env := startServer(t, nil)
	c := dial(t, env.addr)
	reply, err := send(c, "app@example.org", []string{"a@example.net"}, "Subject: no ids\r\n\r\nbody\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, env.store, queueIDFrom(t, reply)); strings.Contains(body, "Message-ID") {
		t.Errorf("header added with add_missing_headers off:\n%s", body)
	}
}
