package submission

import (
	"strings"
	"testing"
)

// The ORCPT of RCPT (RFC 3461 section 4.2) as Postfix and other MTAs send
// it: xtext whose +XX may be any byte, the utf-8 address type (RFC 6533),
// and address types relayq does not know, which are kept rather than
// failing the recipient. Only a value that is not xtext at all is refused.
func TestRcptORCPT(t *testing.T) {
	env := startServer(t, nil)
	for _, tc := range []struct {
		name, param string
		want        string // stored ORCPT; "" means the RCPT is refused
	}{
		{"ascii rfc822", "ORCPT=rfc822;Bob+2Bx@Example.NET", "rfc822;Bob+x@Example.NET"},
		{"rfc822 with UTF-8 bytes", "ORCPT=rfc822;zo+C3+AB@example.net", "rfc822;zoë@example.net"},
		{"utf-8 xtext", `ORCPT=utf-8;zo\x{EB}@example.net`, "utf-8;zoë@example.net"},
		{"utf-8 unitext", "ORCPT=UTF-8;zoë@example.net", "utf-8;zoë@example.net"},
		{"unknown type x400", "ORCPT=X400;c+3Dus+3Bo+3Dacme+3Bs+3Dzo+C3+AB", "x400;c=us;o=acme;s=zoë"},
		{"malformed hexchar", "ORCPT=rfc822;a+G1@example.net", ""},
		{"incomplete hexchar", "ORCPT=rfc822;a+C@example.net", ""},
		{"control character", "ORCPT=rfc822;a+0Db@example.net", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rawDial(t, env.addr)
			c.cmd("EHLO client.test", "250")
			c.cmd("MAIL FROM:<app@example.org> SMTPUTF8", "250")
			c.send("RCPT TO:<bob@example.net> NOTIFY=SUCCESS,FAILURE " + tc.param + "\r\n")
			reply := c.reply()
			if tc.want == "" {
				if !strings.HasPrefix(reply, "501 5.5.4") {
					t.Fatalf("RCPT with %s: %q, want 501 5.5.4", tc.param, reply)
				}
				return
			}
			if !strings.HasPrefix(reply, "250") {
				t.Fatalf("RCPT with %s: %q, want 250", tc.param, reply)
			}
			c.cmd("DATA", "354")
			reply = c.cmd("Subject: orcpt\r\n\r\nhi\r\n.", "250")
			e, err := env.store.Get(queueIDFrom(t, strings.TrimPrefix(reply, "250 ")))
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Recipients[0].ORCPT; got != tc.want {
				t.Fatalf("stored ORCPT %q, want %q", got, tc.want)
			}
		})
	}
}
