package dsn

import (
	"bytes"
	"testing"
	"time"
)

// utf8Message is an internationalized message (RFC 6532: UTF-8 in its
// header fields), as a client sends it with SMTPUTF8.
const utf8Message = "From: Zoë <zoë@example.org>\r\n" +
	"To: Jürgen <jürgen@beispiel.de>, Bob <bob@example.net>\r\n" +
	"Subject: Größenordnung\r\n" +
	"Date: Fri, 14 Mar 2025 09:26:50 +0100\r\n" +
	"Message-ID: <20250314092650.5678@client.example.org>\r\n" +
	"MIME-Version: 1.0\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n" +
	"Content-Transfer-Encoding: 8bit\r\n" +
	"\r\n" +
	"Grüße\r\n"

// RFC 6533 section 4: the report on an internationalized message (sent
// with SMTPUTF8) returns its header section as message/global-headers,
// not text/rfc822-headers, which allows no UTF-8 in header fields. With
// recipients whose fields are ASCII, the status part stays
// message/delivery-status.
func TestGoldenSMTPUTF8HeadersOnly(t *testing.T) {
	r := baseReport()
	r.To = "zoë@example.org"
	r.SMTPUTF8 = true
	r.Recipients = []Recipient{{
		Final: "bob@example.net", Action: ActionFailed, Status: "5.1.1",
		RemoteMTA: "mx1.example.net", Diagnostic: "550 5.1.1 No such user", LastAttempt: now.Add(-time.Minute),
	}}
	out := write(t, r, utf8Message)
	golden(t, "smtputf8_headers_only", out)
	for _, want := range []string{
		"Content-Type: message/delivery-status\r\n",
		"Content-Type: message/global-headers\r\nContent-Transfer-Encoding: 8bit\r\n\r\nFrom: Zoë <zoë@example.org>\r\n",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %q", want)
		}
	}
	if bytes.Contains(out, []byte("text/rfc822-headers")) || bytes.Contains(out, []byte("Grüße")) {
		t.Error("the headers of an SMTPUTF8 message returned as text/rfc822-headers, or with its body")
	}
}

// A recipient of an internationalized message whose address or reply is
// UTF-8: the status part is message/global-delivery-status with the UTF-8
// as it is (RFC 6533 section 3's utf-8-address form), 8bit; the whole
// message returned is message/global (RFC 6532 section 3.7).
func TestGoldenSMTPUTF8GlobalStatus(t *testing.T) {
	r := baseReport()
	r.To = "zoë@example.org"
	r.SMTPUTF8 = true
	r.ReturnFull = true
	r.Recipients = []Recipient{
		{Final: "jürgen@beispiel.de", Original: "utf-8;jürgen@beispiel.de", Action: ActionFailed, Status: "5.1.1",
			RemoteMTA: "mx.beispiel.de", Diagnostic: "550 5.1.1 Empfänger unbekannt", LastAttempt: now},
		{Final: "bob@example.net", Action: ActionDelayed, Status: "4.2.2",
			RemoteMTA: "mx1.example.net", Diagnostic: "452 4.2.2 Mailbox full", LastAttempt: now,
			WillRetryUntil: arrival.Add(5 * 24 * time.Hour)},
	}
	out := write(t, r, utf8Message)
	golden(t, "smtputf8_global", out)
	for _, want := range []string{
		"Content-Type: message/global-delivery-status\r\nContent-Transfer-Encoding: 8bit\r\n",
		"Original-Recipient: utf-8; jürgen@beispiel.de\r\nFinal-Recipient: utf-8; jürgen@beispiel.de\r\n",
		"Diagnostic-Code: smtp; 550 5.1.1 Empfänger unbekannt\r\n",
		"Final-Recipient: rfc822; bob@example.net\r\n",
		"Content-Type: message/global\r\nContent-Transfer-Encoding: 8bit\r\n\r\n" + utf8Message,
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %q", want)
		}
	}

	// The same report on a message sent without SMTPUTF8 keeps the 7-bit
	// forms: the sender's path may not take UTF-8.
	r.SMTPUTF8 = false
	plain := write(t, r, utf8Message)
	for _, want := range []string{
		"Content-Type: message/delivery-status\r\n",
		`Final-Recipient: utf-8; j\x{FC}rgen@beispiel.de` + "\r\n",
		"Content-Type: message/rfc822\r\n",
	} {
		if !bytes.Contains(plain, []byte(want)) {
			t.Errorf("report without SMTPUTF8 lacks %q", want)
		}
	}
}
