package delivery

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/smtptest"
)

// What the reports say about a reply: the Diagnostic-Code quotes it as the
// server sent it (never a code the server did not send), and the Status
// agrees with the Action: 4.x.x for "delayed" (RFC 3464 section 2.3.3 and
// RFC 3463 section 3.1), whatever class the server's own code had. A 552
// at RCPT is retried (RFC 5321 section 4.5.3.1.10), so it is reported
// delayed, then failed when the attempts run out.
func TestReportStatusAndDiagnostic(t *testing.T) {
	cases := []struct {
		name, rule string
		reports    []string // per report, in order: lines it must contain
	}{
		{"552 5.2.2 at RCPT", "rcpt:full@=552 5.2.2 Mailbox full", []string{
			"Action: delayed\r\nStatus: 4.2.2\r\n", "Diagnostic-Code: smtp; 552 5.2.2 Mailbox full\r\n",
			"Action: failed\r\nStatus: 5.2.2\r\n", "Diagnostic-Code: smtp; 552 5.2.2 Mailbox full\r\n",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, []smtptest.Option{smtptest.Reply(tc.rule)}, func(o *Options) {
				o.Policy.MaxAttempts = 3
				o.WarnAfter = time.Nanosecond
			})
			r.submit("app@example.org", "full@example.net")
			want := len(tc.reports) / 2
			var got []string
			for i := 0; len(got) < want && i < 10; i++ {
				r.advanceToOutcome()
				for _, m := range r.srv.Messages() {
					if m.From == "" && len(got) < want && !strings.Contains(strings.Join(got, "\x00"), string(m.Data)) {
						got = append(got, string(m.Data))
					}
				}
			}
			if len(got) != want {
				t.Fatalf("%d reports, want %d", len(got), want)
			}
			for i := range want {
				for _, line := range tc.reports[2*i : 2*i+2] {
					if !strings.Contains(got[i], line) {
						t.Errorf("report %d lacks %q:\n%s", i+1, line, got[i])
					}
				}
			}
		})
	}
}

// A server that gives no enhanced code (smtptest always gives one) is
// quoted without one: "500 5.0.0" would be a code it never sent. The
// Status field, which RFC 3464 requires, is 5.0.0.
func TestReportQuotesReplyWithoutEnhancedCode(t *testing.T) {
	mx := bareMX(t, "500 Command unrecognised")
	dialer := &smtpclient.Dialer{Hostname: "relay.test", TLS: "none", CommandTimeout: 10 * time.Second, ConnectTimeout: 5 * time.Second}
	r := newRigWith(t, clock.NewFake(t0), mx.addr, dialer, nil)
	r.submit("app@example.org", "full@example.net")
	if s := r.outcome(); s != "bounced" {
		t.Fatalf("%s, want bounced", s)
	}
	if s := r.outcome(); s != "delivered" { // the report
		t.Fatalf("report: %s", s)
	}
	report := <-mx.bodies
	for _, line := range []string{"Action: failed\r\nStatus: 5.0.0\r\n", "Diagnostic-Code: smtp; 500 Command unrecognised\r\n"} {
		if !strings.Contains(report, line) {
			t.Errorf("report lacks %q:\n%s", line, report)
		}
	}
}

// bareMX is an SMTP server that answers RCPT for full@ with rcptReply and
// accepts everything else, with plain replies: no enhanced codes; its EHLO
// reply lists the extensions in ehlo.
type bareServer struct {
	addr   string
	bodies chan string
}

func bareMX(t *testing.T, rcptReply string, ehlo ...string) *bareServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &bareServer{addr: ln.Addr().String(), bodies: make(chan string, 10)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c, rcptReply, ehlo)
		}
	}()
	return s
}

func (s *bareServer) serve(c net.Conn, rcptReply string, ehlo []string) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	say := func(line string) { _, _ = io.WriteString(c, line+"\r\n") }
	say("220 bare ESMTP")
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(line)
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			lines := append([]string{"bare"}, ehlo...)
			for i, l := range lines {
				if i < len(lines)-1 {
					say("250-" + l)
				} else {
					say("250 " + l)
				}
			}
		case strings.HasPrefix(cmd, "RCPT") && strings.Contains(cmd, "FULL@"):
			say(rcptReply)
		case strings.HasPrefix(cmd, "DATA"):
			say("354 go ahead")
			var body strings.Builder
			for {
				l, err := br.ReadString('\n')
				if err != nil || l == ".\r\n" {
					break
				}
				body.WriteString(l)
			}
			s.bodies <- body.String()
			say("250 ok")
		case strings.HasPrefix(cmd, "QUIT"):
			say("221 bye")
			return
		default:
			say("250 ok")
		}
	}
}
