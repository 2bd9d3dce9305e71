package smtpclient

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/emersion/go-sasl"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/smtpcodes"
	"github.com/relayq/relayq/smtptest"
)

// shHops is the hop of a smarthost at sh.Address ("host:port"), as the
// router makes it.
func shHops(t *testing.T, sh Smarthost) []Hop {
	t.Helper()
	h := hopTo(t, sh.Address)
	h.Smarthost, h.ImplicitTLS = true, sh.TLS == SmarthostImplicit
	return []Hop{h}
}

func authEvents(srv *smtptest.Server) []smtptest.Event {
	var out []smtptest.Event
	for _, e := range srv.Events() {
		if e.Stage == smtptest.StageAuth {
			out = append(out, e)
		}
	}
	return out
}

func TestSmarthostAuth(t *testing.T) {
	t.Run("STARTTLS and PLAIN", func(t *testing.T) {
		srv := smtptest.NewServer(t, smtptest.StartTLS(), smtptest.Auth("relay", "s3cret"))
		sh := Smarthost{Address: srv.Addr(), Username: "relay", Password: "s3cret", TLS: SmarthostSTARTTLS}
		d := testDialer()
		d.Smarthost, d.RootCAs = &sh, srv.CertPool()
		res := deliver(t, d, shHops(t, sh), envelope("a@example.com"), bodyOf(testBody))
		wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
		msgs := srv.Messages()
		if len(msgs) != 1 || msgs[0].AuthUser != "relay" || !msgs[0].TLS || msgs[0].Helo != "relay.test" {
			t.Fatalf("messages = %+v, want one over TLS from user relay with EHLO relay.test", msgs)
		}
		if ev := authEvents(srv); len(ev) != 1 || !strings.HasPrefix(ev[0].Arg, "PLAIN") {
			t.Errorf("auth events = %+v, want one PLAIN", ev)
		}
	})
	t.Run("implicit TLS", func(t *testing.T) {
		srv := smtptest.NewServer(t, smtptest.ImplicitTLS(), smtptest.Auth("relay", "s3cret"))
		sh := Smarthost{Address: srv.Addr(), Username: "relay", Password: "s3cret", TLS: SmarthostImplicit}
		d := testDialer()
		d.Smarthost, d.RootCAs = &sh, srv.CertPool()
		res := deliver(t, d, shHops(t, sh), envelope("a@example.com"), bodyOf(testBody))
		wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
		if msgs := srv.Messages(); len(msgs) != 1 || msgs[0].AuthUser != "relay" {
			t.Fatalf("messages = %+v", msgs)
		}
	})
	t.Run("wrong password waits for the operator", func(t *testing.T) {
		srv := smtptest.NewServer(t, smtptest.StartTLS(), smtptest.Auth("relay", "s3cret"))
		sh := Smarthost{Address: srv.Addr(), Username: "relay", Password: "wrong"}
		d := testDialer()
		d.Smarthost, d.RootCAs = &sh, srv.CertPool()
		res := deliver(t, d, shHops(t, sh), envelope("a@example.com"), bodyOf(testBody))
		wantAll(t, res, smtpcodes.Transient, 535, "4.7.8")
	})
	t.Run("no credentials without TLS", func(t *testing.T) {
		srv := smtptest.NewServer(t, smtptest.Auth("relay", "s3cret"), smtptest.AllowInsecureAuth())
		sh := Smarthost{Address: srv.Addr(), Username: "relay", Password: "s3cret", TLS: SmarthostNoTLS}
		d := testDialer()
		d.Smarthost = &sh
		res := deliver(t, d, shHops(t, sh), envelope("a@example.com"), bodyOf(testBody))
		wantAll(t, res, smtpcodes.Transient, 0, "4.7.11")
		if !strings.Contains(res[0].Reply.Text, "allow_insecure_auth") {
			t.Errorf("reply text %q should name the reason", res[0].Reply.Text)
		}
		if ev := authEvents(srv); len(ev) != 0 || srv.MessageCount() != 0 {
			t.Errorf("server saw auth %+v and %d messages; want none", ev, srv.MessageCount())
		}

		sh.AllowInsecureAuth = true
		res = deliver(t, d, shHops(t, sh), envelope("a@example.com"), bodyOf(testBody))
		wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
	})
	t.Run("STARTTLS required of a smarthost", func(t *testing.T) {
		srv := smtptest.NewServer(t, smtptest.Auth("relay", "s3cret"), smtptest.AllowInsecureAuth())
		sh := Smarthost{Address: srv.Addr(), Username: "relay", Password: "s3cret"}
		d := testDialer()
		d.Smarthost = &sh
		res := deliver(t, d, shHops(t, sh), envelope("a@example.com"), bodyOf(testBody))
		wantAll(t, res, smtpcodes.Transient, 0, "4.7.10")
		if len(authEvents(srv)) != 0 {
			t.Error("credentials sent to a smarthost without STARTTLS")
		}
	})
	t.Run("route hops never get the password", func(t *testing.T) {
		srv := smtptest.NewServer(t, smtptest.Auth("relay", "s3cret"), smtptest.AllowInsecureAuth())
		sh := Smarthost{Address: srv.Addr(), Username: "relay", Password: "s3cret", TLS: SmarthostNoTLS, AllowInsecureAuth: true}
		d := testDialer()
		d.Smarthost = &sh
		res := deliver(t, d, []Hop{hopTo(t, srv.Addr())}, envelope("a@example.com"), bodyOf(testBody))
		wantAll(t, res, smtpcodes.Transient, 530, "4.7.0")
		if len(authEvents(srv)) != 0 {
			t.Error("smarthost credentials sent to a non-smarthost hop")
		}
	})
}

func TestOutboundTLSPolicy(t *testing.T) {
	plain := smtptest.NewServer(t)
	tlsSrv := smtptest.NewServer(t, smtptest.StartTLS())

	tests := []struct {
		name    string
		srv     *smtptest.Server
		policy  TLSMode
		roots   bool
		wantTLS bool
		wantEnh string // "" = delivered
	}{
		{"opportunistic, offered, unverified cert", tlsSrv, TLSOpportunistic, false, true, ""},
		{"opportunistic, not offered", plain, "", false, false, ""},
		{"required, offered, verified", tlsSrv, TLSRequired, true, true, ""},
		{"required, not offered", plain, TLSRequired, false, false, "4.7.10"},
		{"required, untrusted cert", tlsSrv, TLSRequired, false, false, "4.7.5"},
		{"none", tlsSrv, TLSNone, false, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.srv.MessageCount()
			d := testDialer()
			d.TLS = tc.policy
			if tc.roots {
				d.RootCAs = tc.srv.CertPool()
			}
			res := deliver(t, d, []Hop{hopTo(t, tc.srv.Addr())}, envelope("a@example.test"), bodyOf(testBody))
			if tc.wantEnh != "" {
				wantAll(t, res, smtpcodes.Transient, 0, tc.wantEnh)
				if tc.srv.MessageCount() != before {
					t.Error("message sent despite the TLS policy")
				}
				return
			}
			wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
			msgs := tc.srv.Messages()
			if len(msgs) != before+1 || msgs[len(msgs)-1].TLS != tc.wantTLS {
				t.Errorf("want one more message with TLS=%v, got %+v", tc.wantTLS, msgs)
			}
		})
	}
}

func TestLoginClientAnswersPrompts(t *testing.T) {
	for _, prompts := range [][2]string{{"Username:", "Password:"}, {"username:", "password:"}, {"", ""}, {"VXNlcg", "UGFzcw"}} {
		c := newLoginClient("u", "p")
		if mech, ir, err := c.Start(); mech != "LOGIN" || ir != nil || err != nil {
			t.Fatalf("Start = %s %q %v", mech, ir, err)
		}
		a, _ := c.Next([]byte(prompts[0]))
		b, _ := c.Next([]byte(prompts[1]))
		if string(a) != "u" || string(b) != "p" {
			t.Errorf("prompts %q: answered %q, %q", prompts, a, b)
		}
		if _, err := c.Next([]byte("more?")); err == nil {
			t.Error("third challenge accepted")
		}
	}
}

// loginOnly is a go-smtp session that offers only AUTH LOGIN and prompts
// "Username:" first, as servers that reject an initial response do.
type loginOnly struct {
	dsnServer
	user string
}

func (l *loginOnly) NewSession(*smtp.Conn) (smtp.Session, error) { return l, nil }
func (l *loginOnly) AuthMechanisms() []string                    { return []string{"LOGIN"} }
func (l *loginOnly) Auth(string) (sasl.Server, error) {
	step, user := 0, ""
	return saslServerFunc(func(resp []byte) ([]byte, bool, error) {
		step++
		switch step {
		case 1: // no initial response expected
			if len(resp) != 0 {
				return nil, false, errors.New("unexpected initial response")
			}
			return []byte("Username:"), false, nil
		case 2:
			user = string(resp)
			return []byte("Password:"), false, nil
		}
		if user != "relay" || string(resp) != "s3cret" {
			return nil, false, smtp.ErrAuthFailed
		}
		l.mu.Lock()
		l.user = user
		l.mu.Unlock()
		return nil, true, nil
	}), nil
}

type saslServerFunc func([]byte) ([]byte, bool, error)

func (f saslServerFunc) Next(resp []byte) ([]byte, bool, error) { return f(resp) }

func TestSmarthostAuthLogin(t *testing.T) {
	b := &loginOnly{}
	srv := smtp.NewServer(b)
	srv.AllowInsecureAuth = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	sh := Smarthost{Address: ln.Addr().String(), Username: "relay", Password: "s3cret", TLS: SmarthostNoTLS, AllowInsecureAuth: true}
	d := testDialer()
	d.Smarthost = &sh
	res := deliver(t, d, shHops(t, sh), envelope("a@example.com"), bodyOf(testBody))
	wantAll(t, res, smtpcodes.Success, 250, "2.0.0")
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.user != "relay" {
		t.Errorf("server authenticated %q, want relay", b.user)
	}
}
