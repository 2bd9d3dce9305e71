package smtptest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/emersion/go-sasl"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

func TestStartTLSVerifiedWithCertPool(t *testing.T) {
	s := NewServer(t, StartTLS())
	c, err := smtp.DialStartTLS(s.Addr(), &tls.Config{RootCAs: s.CertPool(), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("STARTTLS: %v", err)
	}
	defer c.Close()
	mustSend(t, c, "over TLS")
	if m := s.WaitMessages(t, 1, waitTimeout); !m[0].TLS {
		t.Fatal("message over STARTTLS recorded with TLS=false")
	}
	if block, _ := pem.Decode(s.CertPEM()); block == nil || block.Type != "CERTIFICATE" {
		t.Fatal("CertPEM is not a PEM certificate")
	}
}

func TestStartTLSUntrustedWithoutPool(t *testing.T) {
	s := NewServer(t, StartTLS())
	c, err := smtp.DialStartTLS(s.Addr(), &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "127.0.0.1"})
	if err == nil {
		// The handshake is lazy in go-smtp: the error shows on the next command.
		err = c.Mail("a@src.test", nil)
		c.Close()
	}
	if err == nil {
		t.Fatal("a client without the server's certificate trusted it")
	}
}

func TestImplicitTLS(t *testing.T) {
	s := NewServer(t, ImplicitTLS())
	c, err := smtp.DialTLS(s.Addr(), s.ClientTLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mustSend(t, c, "over implicit TLS")
	if m := s.WaitMessages(t, 1, waitTimeout); !m[0].TLS {
		t.Fatal("message over implicit TLS recorded with TLS=false")
	}
}

func TestAuth(t *testing.T) {
	s := NewServer(t, Auth("alice", "s3cret"), AllowInsecureAuth())
	tests := []struct {
		name   string
		client sasl.Client
		code   int // 0: success
	}{
		{"plain", sasl.NewPlainClient("", "alice", "s3cret"), 0},
		{"login", sasl.NewLoginClient("alice", "s3cret"), 0},
		{"plain wrong password", sasl.NewPlainClient("", "alice", "nope"), 535},
		{"login wrong password", sasl.NewLoginClient("alice", "nope"), 535},
		{"unknown user", sasl.NewPlainClient("", "mallory", "s3cret"), 535},
		{"plain as another identity", sasl.NewPlainClient("bob", "alice", "s3cret"), 535},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s.Addr())
			err := c.Auth(tc.client)
			if tc.code != 0 {
				wantCode(t, err, tc.code, smtp.EnhancedCode{5, 7, 8}, "Authentication failed")
				wantCode(t, c.Mail("a@src.test", nil), 530, smtp.EnhancedCode{5, 7, 0}, "Authentication required")
				return
			}
			if err != nil {
				t.Fatalf("AUTH: %v", err)
			}
			mustSend(t, c, "after AUTH")
			m := s.Messages()
			if got := m[len(m)-1].AuthUser; got != "alice" {
				t.Fatalf("AuthUser = %q, want alice", got)
			}
		})
	}
}

func TestAuthRequiredRefusesMail(t *testing.T) {
	s := NewServer(t, Auth("alice", "s3cret"), AllowInsecureAuth())
	c := dial(t, s.Addr())
	if err := c.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	if !c.SupportsAuth("PLAIN") || !c.SupportsAuth("LOGIN") {
		t.Fatal("AUTH PLAIN and LOGIN not advertised")
	}
	wantCode(t, c.Mail("a@src.test", nil), 530, smtp.EnhancedCode{5, 7, 0}, "Authentication required")
}

func TestAuthOnlyOverTLSByDefault(t *testing.T) {
	s := NewServer(t, Auth("alice", "s3cret"), StartTLS())
	c := dial(t, s.Addr())
	if err := c.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	if c.SupportsAuth("PLAIN") {
		t.Fatal("AUTH advertised on a plaintext connection without AllowInsecureAuth")
	}
	c2, err := smtp.DialStartTLS(s.Addr(), s.ClientTLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := c2.Auth(sasl.NewPlainClient("", "alice", "s3cret")); err != nil {
		t.Fatalf("AUTH over STARTTLS: %v", err)
	}
}
