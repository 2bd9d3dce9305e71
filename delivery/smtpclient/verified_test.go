package smtpclient

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"net"
	"testing"

	"github.com/relayq/relayq/smtptest"
)

// mxTo is a Dialer that reaches srv whatever MX host a hop names, trusting
// only certs (as for MTA-STS), and the hop for mx.example.test.
func mxTo(t *testing.T, srv *smtptest.Server, roots *smtptest.Cert, policy *HopTLS) (*Dialer, Hop) {
	t.Helper()
	d := testDialer()
	if roots != nil {
		d.RootCAs = roots.Pool
	}
	d.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var nd net.Dialer
		return nd.DialContext(ctx, network, srv.Addr())
	}
	t.Cleanup(d.Close)
	return d, Hop{Host: "mx.example.test", Port: "25", MX: "mx.example.test", TLS: policy}
}

func spki311(c *smtptest.Cert) TLSA {
	sum := sha256.Sum256(c.TLS.Leaf.RawSubjectPublicKeyInfo)
	return TLSA{Usage: 3, Selector: 1, MatchingType: 1, Data: sum[:]}
}

func newMXCert(t *testing.T, names ...string) *smtptest.Cert {
	t.Helper()
	c, err := smtptest.NewCertFor(names...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Each verified policy either delivers over TLS it could check, or defers
// with 4.7.5 and sends nothing in clear; testing mode delivers and reports.
func TestVerifiedTLS(t *testing.T) {
	good := newMXCert(t, "mx.example.test")
	other := newMXCert(t, "other.example.test")
	tests := []struct {
		name      string
		opts      []smtptest.Option
		roots     *smtptest.Cert
		policy    *HopTLS
		delivered bool
		failure   Failure
		version   bool
	}{
		{"mta-sts enforce, valid cert", []smtptest.Option{smtptest.StartTLS(), smtptest.WithCert(good)}, good,
			&HopTLS{Policy: PolicyMTASTS}, true, "", true},
		{"mta-sts enforce, no STARTTLS", nil, good,
			&HopTLS{Policy: PolicyMTASTS}, false, FailStartTLSNotSupported, false},
		{"mta-sts enforce, cert for another name", []smtptest.Option{smtptest.StartTLS(), smtptest.WithCert(other)}, other,
			&HopTLS{Policy: PolicyMTASTS}, false, FailCertHostMismatch, false},
		{"mta-sts enforce, untrusted cert", []smtptest.Option{smtptest.StartTLS(), smtptest.WithCert(good)}, nil,
			&HopTLS{Policy: PolicyMTASTS}, false, FailCertNotTrusted, false},
		{"mta-sts enforce, MX not in policy", []smtptest.Option{smtptest.StartTLS(), smtptest.WithCert(good)}, good,
			&HopTLS{Policy: PolicyMTASTS, Refuse: FailMXMismatch}, false, FailMXMismatch, false},
		{"mta-sts testing, no STARTTLS", nil, good,
			&HopTLS{Policy: PolicyMTASTS, Testing: true}, true, FailStartTLSNotSupported, false},
		{"mta-sts testing, MX not in policy", nil, good,
			&HopTLS{Policy: PolicyMTASTS, Testing: true, Refuse: FailMXMismatch}, true, FailMXMismatch, false},
		{"dane 3 1 1 matching", []smtptest.Option{smtptest.StartTLS(), smtptest.WithCert(other)}, nil,
			&HopTLS{Policy: PolicyDANE, TLSA: []TLSA{spki311(other)}}, true, "", true},
		{"dane 3 1 1 mismatching", []smtptest.Option{smtptest.StartTLS(), smtptest.WithCert(good)}, good,
			&HopTLS{Policy: PolicyDANE, TLSA: []TLSA{spki311(other)}}, false, FailTLSAInvalid, false},
		{"dane, no STARTTLS", nil, nil,
			&HopTLS{Policy: PolicyDANE, TLSA: []TLSA{spki311(good)}}, false, FailStartTLSNotSupported, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := smtptest.NewServer(t, tt.opts...)
			d, hop := mxTo(t, srv, tt.roots, tt.policy)
			res := d.Deliver(context.Background(), []Hop{hop}, envelope("rcpt@example.test"), bodyOf(testBody))
			got := res[0]
			if n := len(srv.Messages()); (n == 1) != tt.delivered {
				t.Fatalf("%d messages at the MX; reply %+v", n, got.Reply)
			}
			if !tt.delivered && (got.Reply.Enhanced != "4.7.5") {
				t.Fatalf("reply %+v, want a transient 4.7.5", got.Reply)
			}
			if got.TLS.Policy != tt.policy.Policy || got.TLS.Failure != tt.failure || got.TLS.Testing != tt.policy.Testing {
				t.Fatalf("TLS = %+v, want policy %s failure %q", got.TLS, tt.policy.Policy, tt.failure)
			}
			if tt.version && got.TLS.Version == "" {
				t.Fatalf("TLS = %+v: no version", got.TLS)
			}
		})
	}
}

// A DANE-TA 2 0 1 record naming the issuer accepts a leaf it signed for
// the MX name, and only for that name.
func TestMatchTLSADaneTA(t *testing.T) {
	ca := newMXCert(t, "ca.example.test") // self-signed, IsCA: serves as its own issuer
	sum := sha256.Sum256(ca.TLS.Leaf.Raw)
	rec := []TLSA{{Usage: 2, Selector: 0, MatchingType: 1, Data: sum[:]}}
	leaf := ca.TLS.Leaf
	now := leaf.NotBefore.Add(1)
	// The CA as leaf and as the chain's second certificate: a name check
	// against the MX host still applies.
	if err := MatchTLSA(rec, []*x509.Certificate{leaf, leaf}, "ca.example.test", now); err != nil {
		t.Fatalf("DANE-TA: %v", err)
	}
	if err := MatchTLSA(rec, []*x509.Certificate{leaf, leaf}, "mx.example.test", now); err == nil {
		t.Fatal("DANE-TA matched a certificate for another name")
	}
	if err := MatchTLSA([]TLSA{{Usage: 1, Selector: 0, MatchingType: 1, Data: sum[:]}}, []*x509.Certificate{leaf, leaf}, "ca.example.test", now); err == nil {
		t.Fatal("PKIX-EE usage matched; RFC 7672 makes it unusable")
	}
}
