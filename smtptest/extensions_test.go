package smtptest

import (
	"strings"
	"testing"
	"time"
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
