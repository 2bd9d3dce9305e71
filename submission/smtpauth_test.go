package submission

import (
	"crypto/tls"
	"fmt"
	"strings"
	"testing"

	"github.com/emersion/go-sasl"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/identity"
)

// SMTP AUTH as a client meets it: offered only over TLS, wrong passwords
// refused, repeated failures locked out.

func TestAuthNotOfferedWithoutTLS(t *testing.T) {
	env := startServer(t, func(o *Options) {
		o.Policy = Policy{Users: []User{{Username: "app", PasswordHash: hash(t, "secret")}}}
	})
	c := dial(t, env.addr)
	if ok, _ := c.Extension("AUTH"); ok {
		t.Fatal("AUTH advertised on a plain connection")
	}
	r := rawDial(t, env.addr)
	r.cmd("EHLO x", "250")
	r.cmd("AUTH PLAIN AGFwcABzZWNyZXQ=", "523")
}

func TestStartTLSAuth(t *testing.T) {
	tlsConf, pool := testCert(t)
	env := startServer(t, func(o *Options) {
		o.TLS = tlsConf
		o.Policy = Policy{Users: []User{{Username: "app", PasswordHash: hash(t, "s3cret")}}}
	})
	for _, mech := range []string{"PLAIN", "LOGIN"} {
		t.Run(mech, func(t *testing.T) {
			c, err := smtp.DialStartTLS(env.addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ok, mechs := c.Extension("AUTH")
			if !ok || !strings.Contains(mechs, "PLAIN") || !strings.Contains(mechs, "LOGIN") {
				t.Fatalf("AUTH after STARTTLS: %v %q", ok, mechs)
			}
			var a sasl.Client
			if mech == "PLAIN" {
				a = sasl.NewPlainClient("", "app", "s3cret")
			} else {
				a = sasl.NewLoginClient("app", "s3cret")
			}
			if err := c.Auth(a); err != nil {
				t.Fatalf("AUTH %s: %v", mech, err)
			}
			reply, err := send(c, "app@example.org", []string{"bob@example.net"}, msg)
			if err != nil {
				t.Fatal(err)
			}
			e, err := env.store.Get(queueIDFrom(t, reply))
			if err != nil {
				t.Fatal(err)
			}
			if want := (identity.Credential{Kind: identity.User, Name: "app"}); e.Sender.Credential != want {
				t.Fatalf("credential %+v, want %+v", e.Sender.Credential, want)
			}
			if b := readBody(t, env.store, e.ID); !strings.Contains(b, "with ESMTPSA id") {
				t.Errorf("Received header does not say ESMTPSA:\n%s", b)
			}
		})
	}
}

func TestWrongPassword(t *testing.T) {
	tlsConf, pool := testCert(t)
	env := startServer(t, func(o *Options) {
		o.TLS = tlsConf
		o.Policy = Policy{Users: []User{{Username: "app", PasswordHash: hash(t, "s3cret")}}}
	})
	c, err := smtp.DialStartTLS(env.addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Auth(sasl.NewPlainClient("", "app", "wrong"))
	if smtpCode(err) != 535 || enhanced(err) != "5.7.8" {
		t.Fatalf("wrong password: %v, want 535 5.7.8", err)
	}
	if err := c.Mail("app@example.org", nil); smtpCode(err) != 530 {
		t.Fatalf("MAIL after failed AUTH: %v, want 530", err)
	}
}

func TestAuthBruteForceLockedOut(t *testing.T) {
	tlsConf, pool := testCert(t)
	env := startServer(t, func(o *Options) {
		o.TLS = tlsConf
		o.AuthMaxFailures = 3
		o.Policy = Policy{Users: []User{{Username: "app", PasswordHash: hash(t, "s3cret")}}}
	})
	login := func(pw string) error {
		c, err := smtp.DialStartTLS(env.addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err != nil {
			return err
		}
		defer c.Close()
		return c.Auth(sasl.NewPlainClient("", "app", pw))
	}
	for i := 0; i < 3; i++ {
		if err := login(fmt.Sprint("guess", i)); smtpCode(err) != 535 {
			t.Fatalf("guess %d: %v, want 535", i, err)
		}
	}
	// Locked out: even the right password is refused, with a temporary code,
	// and new connections from the address are turned away at once.
	err := login("s3cret")
	if err == nil || smtpCode(err) == 235 {
		t.Fatalf("right password accepted during lockout")
	}
	if c := smtpCode(err); c != 421 && c != 454 {
		t.Fatalf("during lockout: %v, want 421 or 454", err)
	}
}
