package returnpath

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/goldenfile"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
)

var noticeTime = time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)

// attached parses a notice and returns its two parts: relayq's text and
// the report, decoded, with the report's content type.
func attached(t *testing.T, msg []byte) (text string, report []byte, typ string) {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	_, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	r := multipart.NewReader(m.Body, params["boundary"])
	var parts [][]byte
	var types []string
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		if p.Header.Get("Content-Transfer-Encoding") == "base64" {
			if b, err = base64.StdEncoding.DecodeString(strings.ReplaceAll(string(b), "\r\n", "")); err != nil {
				t.Fatal(err)
			}
		}
		parts, types = append(parts, b), append(types, p.Header.Get("Content-Type"))
	}
	if len(parts) != 2 {
		t.Fatalf("%d parts, want 2:\n%s", len(parts), msg)
	}
	return string(parts[0]), parts[1], types[1]
}

// A forwarded report is relayq's own notice with the report attached: the
// notice's header section is relayq's (From: MAILER-DAEMON, its own
// Message-ID), the report comes back byte for byte from the attachment,
// as message/rfc822 when it is 7-bit and short-lined, base64-encoded
// message/global otherwise, and the notice itself is 7-bit.
func TestNoticeWrapsTheReport(t *testing.T) {
	about := []About{{VERP: "rq-x@bounces.example.org", QueueID: "18ECAF2DCCF80C22C6A8", MessageID: "<order-42@app.example.org>", Recipient: "gone@example.net"}}
	cases := []struct {
		name, report, typ string
		about             []About
		loop              string
	}{
		{"dsn", sample(t, "postfix-dsn.eml"), "message/rfc822", about, ""},
		{"control-fields", "From: ceo@example.org\r\nIdempotency-Key: k\r\nX-Relayq-Stream: bulk\r\nSubject: pay\r\n\r\nPay now.\r\n", "message/rfc822", about, ""},
		{"utf8", "From: zoë@example.org\r\nSubject: Abwesenheit\r\n\r\nIch bin bis Montag nicht im Büro.\r\n", "message/global", about, ""},
		{"long-line", "Subject: x\r\n\r\n" + strings.Repeat("y", 1200) + "\r\n", "message/global", about, ""},
		{"bare-lf", "Subject: x\r\n\r\na\nb\r\n", "message/global", about, ""},
		{"utf8-recipient", "Subject: x\r\n\r\nhi\r\n", "message/rfc822", []About{{QueueID: "Q", Recipient: "zoë@example.de"}}, ""},
		{"two-recipients", "Subject: x\r\n\r\nhi\r\n", "message/rfc822", append(about, About{QueueID: "18ECAF2DCCF80C22C6A8", Recipient: "slow@example.net"}), ""},
		{"feedback-loop", "Subject: complaint\r\n\r\nhi\r\n", "message/rfc822", nil, "fbl@bounces.example.org"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Forwarded{To: "app@example.org", From: "mailer-daemon@mx.example.net", Report: []byte(c.report), About: c.about, Loop: c.loop}
			msg := notice(f, "relay.example.org", "18ED0000000000000001", noticeTime)
			goldenfile.Check(t, filepath.Join("testdata", "notice-"+c.name+".golden"), msg)
			if !sevenBit(msg) {
				t.Errorf("the notice is not 7-bit text in short lines")
			}
			text, report, typ := attached(t, msg)
			if !bytes.Equal(report, []byte(c.report)) || typ != c.typ {
				t.Errorf("attachment %s:\n%q\nwant %s:\n%q", typ, report, c.typ, c.report)
			}
			hdr, _, _ := strings.Cut(string(msg), "\r\n\r\n")
			if !strings.Contains(hdr, "From: Mail Delivery System <MAILER-DAEMON@relay.example.org>\r\n") ||
				strings.Contains(hdr, "Idempotency-Key") || strings.Contains(hdr, "X-Relayq-Stream") {
				t.Errorf("header section:\n%s", hdr)
			}
			if len(c.about) > 0 && !strings.Contains(text, c.about[0].QueueID) {
				t.Errorf("the text does not name the message:\n%s", text)
			}
		})
	}
}

// The Forwarder queues the notice as relayq's own mail: from <>, to the
// original sender, in the configured stream, unsigned (no Prefix), with
// the engine's hooks called; the report's Idempotency-Key does not make a
// second report with the same key vanish, and its X-Relayq-Stream does
// not pick the stream.
func TestForwarderQueuesUnsignedNotice(t *testing.T) {
	st := queuetest.NewStore(t, nil)
	var claimed, queued []string
	w := &Forwarder{Store: st, Hostname: "relay.example.org", Stream: "default", Clock: clock.NewFake(noticeTime),
		BeforeCommit: func(e *queue.Envelope) { claimed = append(claimed, e.Recipients[0].Address) },
		OnQueued:     func(e *queue.Envelope) { queued = append(queued, e.ID) }}
	report := "From: ceo@example.org\r\nIdempotency-Key: same\r\nX-Relayq-Stream: bulk\r\nSubject: pay\r\n\r\nPay now.\r\n"
	for range 2 {
		if err := w.Forward(context.Background(), Forwarded{To: "app@example.org", Report: []byte(report), About: []About{{QueueID: "Q", Recipient: "gone@example.net"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(claimed) != 2 || len(queued) != 2 {
		t.Fatalf("hooks: claimed %v, queued %v; want two of each", claimed, queued)
	}
	for _, id := range queued {
		env, err := st.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if env.From != "" || len(env.Recipients) != 1 || env.Recipients[0].Address != "app@example.org" ||
			env.Prefix != "" || len(env.DKIM) != 0 || env.Sender != (identity.Sender{Stream: "default"}) {
			t.Errorf("envelope %+v: want from <> to app@example.org, unsigned, unauthenticated, stream default", env)
		}
		rc, err := st.Body(id)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(rc)
		rc.Close()
		if _, got, _ := attached(t, body); string(got) != report {
			t.Errorf("queued attachment %q, want the report", got)
		}
	}
	w.Draining = func() bool { return true }
	if err := w.Forward(context.Background(), Forwarded{To: "app@example.org", Report: []byte(report)}); err == nil {
		t.Error("a draining queue took a forwarded report")
	}
}

// The report handed on carries the listener's own trace field, saying what
// happened: SMTP from the reporting MTA, without AUTH (the listener offers
// none), for the VERP address.
func TestForwardedReportTraceSaysESMTP(t *testing.T) {
	l := newListener(t)
	to := l.verpFor(0)
	if err := l.send("", to, sample(t, "postfix-dsn.eml")); err != nil {
		t.Fatalf("report refused: %v", err)
	}
	if len(l.fwd.body) != 1 {
		t.Fatalf("%d forwarded, want 1", len(l.fwd.body))
	}
	got := string(l.fwd.body[0])
	want := "Received: from mx.example.net ([127.0.0.1])\r\n\tby bounces.example.org (relayq) with ESMTP\r\n\tfor <" + to + ">;\r\n\t"
	if !strings.HasPrefix(got, want) || !strings.Contains(got, "\r\n"+sample(t, "postfix-dsn.eml")) {
		t.Errorf("forwarded report begins\n%.300q\nwant the listener's trace field\n%q\nand then the report", got, want)
	}
}

// Every report accepted for a known message goes to its original sender
// once, whether or not it recorded anything: a success DSN (RFC 3461
// section 4.1, asked for with NOTIFY=SUCCESS) or a "relayed" one records
// nothing, and neither does a person's answer, but the application that
// reads its bounce mailbox is owed them.
func TestEveryAcceptedReportIsForwarded(t *testing.T) {
	success := sample(t, "postfix-success.eml")
	cases := []struct{ name, from, report string }{
		{"postfix success DSN", "", success},
		{"relayed DSN", "", strings.Replace(success, "Action: delivered", "Action: relayed", 1)},
		{"a person's answer", "reader@example.net", "From: reader@example.net\r\nSubject: Re: Your order\r\n\r\nThanks, got it.\r\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newListener(t)
			if err := l.send(c.from, l.verpFor(0), c.report); err != nil {
				t.Fatalf("refused: %v", err)
			}
			if len(l.fwd.all) != 1 || l.fwd.all[0].To != "app@example.org" || !strings.HasSuffix(string(l.fwd.all[0].Report), "\r\n"+c.report) {
				t.Fatalf("forwarded %d times (%v), want once to app@example.org", len(l.fwd.all), l.fwd.to)
			}
			if a := l.fwd.all[0].About; len(a) != 1 || a[0].QueueID != l.id || a[0].Recipient != rcpts[0] {
				t.Errorf("forwarded about %+v, want %s of %s", a, rcpts[0], l.id)
			}
			if got := l.rec.Count("forwarded"); got != 1 {
				t.Errorf("forwarded count %d, want 1", got)
			}
		})
	}
}
