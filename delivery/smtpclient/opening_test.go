package smtpclient

import (
	"net"
	"testing"

	"github.com/relayq/relayq/smtpcodes"
	"github.com/relayq/relayq/smtptest"
)

// closedAddr is an address nothing listens on: connections are refused.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A failure before a mail transaction began is about the host, and says
// at which stage; a reply within the transaction is the message's own.
// The engine tells traffic shaping which is which (a 421 at the greeting
// is no sign of sending too fast).
func TestResultSaysWhetherTheConnectionFailedBeforeMail(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule *smtptest.Rule // nil: nothing listens
		want smtpcodes.Stage
		code int
	}{
		{"refused connection", nil, smtpcodes.StageConnect, 0},
		{"421 at greeting", &smtptest.Rule{Stage: smtptest.StageGreeting, Code: 421, Text: "Too busy"}, smtpcodes.StageGreeting, 421},
		{"421 at EHLO", &smtptest.Rule{Stage: smtptest.StageEHLO, Code: 421, Text: "Too busy"}, smtpcodes.StageHello, 421},
		{"421 at MAIL", &smtptest.Rule{Stage: smtptest.StageMail, Code: 421, Text: "Slow down"}, "", 421},
		{"421 at RCPT", &smtptest.Rule{Stage: smtptest.StageRcpt, Code: 421, Text: "Slow down"}, "", 421},
		{"421 at DATA", &smtptest.Rule{Stage: smtptest.StageData, Code: 421, Text: "Slow down"}, "", 421},
		{"delivered", &smtptest.Rule{Stage: smtptest.StageData, Code: 250}, "", 250},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := closedAddr(t)
			if tc.rule != nil {
				addr = smtptest.NewServer(t, smtptest.WithRules(*tc.rule)).Addr()
			}
			d := testDialer()
			d.TLS = TLSNone
			res := deliver(t, d, []Hop{hopTo(t, addr)}, envelope("bob@example.net"), bodyOf(testBody))
			if r := res[0]; r.Opening != tc.want || r.Reply.Code != tc.code {
				t.Errorf("Opening %q, reply %q; want %q, code %d", r.Opening, r.Reply.String(), tc.want, tc.code)
			}
		})
	}
}
