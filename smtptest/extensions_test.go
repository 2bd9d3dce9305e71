package smtptest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// A server can play one without 8BITMIME (like smtp-sink -8) and with or
// without SMTPUTF8; what the client declared at MAIL is recorded.
func TestExtensionsOffered(t *testing.T) {
	for _, c := range []struct {
		name        string
		opts        []Option
		eight, utf8 bool
	}{
		{"default", nil, true, false},
		{"no 8BITMIME", []Option{No8BitMIME()}, false, false},
		{"SMTPUTF8", []Option{SMTPUTF8()}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := NewServer(t, c.opts...)
			cl := dial(t, srv.Addr())
			if err := cl.Hello("client.test"); err != nil {
				t.Fatal(err)
			}
			if ok, _ := cl.Extension("8BITMIME"); ok != c.eight {
				t.Errorf("8BITMIME offered = %v, want %v", ok, c.eight)
			}
			if ok, _ := cl.Extension("SMTPUTF8"); ok != c.utf8 {
				t.Errorf("SMTPUTF8 offered = %v, want %v", ok, c.utf8)
			}
			if ok, _ := cl.Extension("PIPELINING"); !ok {
				t.Error("other extensions lost with 8BITMIME")
			}
			if err := cl.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader("Subject: x\r\n\r\nhi\r\n")); err != nil {
				t.Fatal(err)
			}
			m := srv.WaitMessages(t, 1, 5*time.Second)[0]
			if want := map[bool]string{true: "8BITMIME", false: ""}[c.eight]; m.BodyType != want {
				t.Errorf("BodyType = %q, want %q (go-smtp's client declares what is offered)", m.BodyType, want)
			}
		})
	}
	if _, err := Start(Config{No8BitMIME: true, StartTLS: true}); err == nil {
		t.Error("No8BitMIME with TLS was accepted")
	}
}

// MaxRecipients refuses each RCPT past the limit of one transaction with
// 452 4.5.3, as RFC 5321 section 4.5.3.1.10 says, and counts afresh in
// the next transaction.
func TestMaxRecipients(t *testing.T) {
	srv := NewServer(t, MaxRecipients(2))
	cl := dial(t, srv.Addr())
	if err := cl.Mail("a@example.com", nil); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := cl.Rcpt(fmt.Sprintf("r%d@example.com", i), nil); err != nil {
			t.Errorf("RCPT %d: %v", i, err)
		}
	}
	var se *smtp.SMTPError
	if err := cl.Rcpt("r2@example.com", nil); !errors.As(err, &se) || se.Code != 452 || se.EnhancedCode != (smtp.EnhancedCode{4, 5, 3}) {
		t.Errorf("RCPT past the limit: %v, want 452 4.5.3", err)
	}
	if err := cl.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Mail("a@example.com", nil); err != nil {
		t.Fatal(err)
	}
	if err := cl.Rcpt("r2@example.com", nil); err != nil {
		t.Errorf("RCPT in a new transaction: %v", err)
	}
}
