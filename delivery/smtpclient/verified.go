package smtpclient

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/relayq/relayq/smtpcodes"
)

// TLSPolicy names the TLS policy a hop was delivered under, as delivery
// log lines and metrics spell it.
type TLSPolicy string

// The per-hop TLS policies (Hop.TLS). DANE and MTA-STS apply to MX hops only.
const (
	// PolicyDANE requires STARTTLS and a certificate matching one of the
	// hop's TLSA records (RFC 7672).
	PolicyDANE TLSPolicy = "dane"
	// PolicyMTASTS requires STARTTLS and a certificate valid for the MX
	// host name (RFC 8461), unless HopTLS.Testing.
	PolicyMTASTS TLSPolicy = "mta-sts"
	// PolicyOpportunistic uses STARTTLS when offered, unverified.
	PolicyOpportunistic TLSPolicy = "opportunistic"
	// PolicyNone is a session without TLS.
	PolicyNone TLSPolicy = "none"
)

// Failure is why verified TLS failed (or, in MTA-STS testing mode, would
// have failed): the result types of RFC 8460 section 4.3, a bounded set.
type Failure string

// The failure reasons smtpclient reports.
const (
	FailStartTLSNotSupported Failure = "starttls-not-supported"
	FailCertHostMismatch     Failure = "certificate-host-mismatch"
	FailCertExpired          Failure = "certificate-expired"
	FailCertNotTrusted       Failure = "certificate-not-trusted"
	FailValidation           Failure = "validation-failure"
	FailTLSAInvalid          Failure = "tlsa-invalid"
	FailDNSSECInvalid        Failure = "dnssec-invalid" // DANE: the TLSA lookup failed at a validating resolver
	FailMXMismatch           Failure = "mx-mismatch"    // MTA-STS: the MX host is not in the policy
)

// TLSA is one DANE TLSA record (RFC 6698) for a hop.
type TLSA struct {
	Usage, Selector, MatchingType uint8
	Data                          []byte
}

// HopTLS is the verified-TLS policy of one MX hop, set by delivery's TLS
// policy; nil leaves the hop to Dialer.TLS.
type HopTLS struct {
	// Policy is PolicyDANE, PolicyMTASTS, PolicyOpportunistic or PolicyNone.
	Policy TLSPolicy
	// Testing (MTA-STS testing mode, or delivery.mta_sts: testing) delivers
	// as opportunistic TLS would and only reports what failed.
	Testing bool
	// TLSA are the hop's usable TLSA records for PolicyDANE. With none,
	// DANE still makes TLS mandatory but unauthenticated (RFC 7672 2.2).
	TLSA []TLSA
	// Refuse, when set, is why the hop must not be used at all (an MX host
	// outside the MTA-STS policy, a TLSA lookup that failed): the attempt
	// fails with 4.7.5 unless Testing.
	Refuse Failure
}

// TLSInfo is how one attempt's connection was secured, for logs, metrics
// and TLS reports.
type TLSInfo struct {
	// Policy is the policy that applied; "" when no hop was reached.
	Policy TLSPolicy
	// Version is the TLS version ("TLSv1.3", as OpenSSL and Postfix spell
	// it), "" without TLS.
	Version string
	// Failure is why verification failed; with Testing set the message
	// went on regardless.
	Failure Failure
	// Testing is HopTLS.Testing of the hop.
	Testing bool
	// Fallback: opportunistic STARTTLS failed, and the session went on in
	// plaintext: the server refused STARTTLS in this session (Failure is
	// then starttls-not-supported), or a handshake with the hop failed
	// less than FallbackTTL ago.
	Fallback bool
}

// mandatory reports whether h requires verified TLS and refuses plaintext.
func (h *HopTLS) mandatory() bool {
	return h != nil && !h.Testing && (h.Policy == PolicyDANE || h.Policy == PolicyMTASTS)
}

// fail notes f unless an earlier failure was noted: an MX outside the
// policy stays the reason, whatever its certificate.
func (s *session) fail(f Failure) {
	if s.tls.Failure == "" {
		s.tls.Failure = f
	}
}

// policyErr is the transient 4.7.5 of a verified-TLS failure.
func policyErr(s *session, f Failure, format string, args ...any) error {
	s.tls.Failure = f
	return smtpcodes.Transientf("4.7.5", "delivery: %s (tls=%s, %s): %s", s.hop.Addr(), s.hop.TLS.Policy, f, fmt.Sprintf(format, args...))
}

// verifyConnection is the tls.Config.VerifyConnection of a hop with a
// verified policy. In testing mode it records a failure and lets the
// handshake go on.
func (s *session) verifyConnection(cs tls.ConnectionState) error {
	f, err := s.check(cs)
	if err == nil {
		return nil
	}
	s.fail(f)
	if s.hop.TLS.Testing {
		return nil
	}
	return err
}

// check verifies the peer of cs as s.hop.TLS says.
func (s *session) check(cs tls.ConnectionState) (Failure, error) {
	if len(cs.PeerCertificates) == 0 {
		return FailValidation, errors.New("no certificate")
	}
	switch s.hop.TLS.Policy {
	case PolicyDANE:
		if len(s.hop.TLS.TLSA) == 0 {
			return "", nil
		}
		if err := MatchTLSA(s.hop.TLS.TLSA, cs.PeerCertificates, s.hop.Host, time.Now()); err != nil {
			return FailTLSAInvalid, err
		}
		return "", nil
	case PolicyMTASTS:
		return verifyPKIX(cs.PeerCertificates, s.hop.Host, s.d.RootCAs)
	}
	return "", nil
}

// verifyPKIX checks chain against roots and name, naming the failure.
func verifyPKIX(chain []*x509.Certificate, name string, roots *x509.CertPool) (Failure, error) {
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{DNSName: name, Roots: roots, Intermediates: inter})
	if err == nil {
		return "", nil
	}
	var host x509.HostnameError
	var inv x509.CertificateInvalidError
	var unk x509.UnknownAuthorityError
	switch {
	case errors.As(err, &host):
		return FailCertHostMismatch, err
	case errors.As(err, &inv) && inv.Reason == x509.Expired:
		return FailCertExpired, err
	case errors.As(err, &unk):
		return FailCertNotTrusted, err
	}
	return FailValidation, err
}

// MatchTLSA reports whether chain (leaf first) matches one of recs (RFC
// 7672 section 3.1): DANE-EE(3) against the leaf, with no name or expiry
// check; DANE-TA(2) against a certificate of the chain that then must
// issue the leaf, valid for host at now. Other usages are unusable for
// SMTP and never match.
func MatchTLSA(recs []TLSA, chain []*x509.Certificate, host string, now time.Time) error {
	if len(chain) == 0 {
		return errors.New("dane: no certificate")
	}
	for _, r := range recs {
		switch r.Usage {
		case 3:
			if tlsaMatches(r, chain[0]) {
				return nil
			}
		case 2:
			for _, ta := range chain[1:] {
				if !tlsaMatches(r, ta) {
					continue
				}
				roots := x509.NewCertPool()
				roots.AddCert(ta)
				inter := x509.NewCertPool()
				for _, c := range chain[1:] {
					inter.AddCert(c)
				}
				if _, err := chain[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter, CurrentTime: now}); err == nil {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("dane: no TLSA record of %d matches the certificate of %s", len(recs), host)
}

// tlsaMatches compares one record with one certificate.
func tlsaMatches(r TLSA, c *x509.Certificate) bool {
	var data []byte
	switch r.Selector {
	case 0:
		data = c.Raw
	case 1:
		data = c.RawSubjectPublicKeyInfo
	default:
		return false
	}
	switch r.MatchingType {
	case 0:
		return bytes.Equal(data, r.Data)
	case 1:
		sum := sha256.Sum256(data)
		return bytes.Equal(sum[:], r.Data)
	case 2:
		sum := sha512.Sum512(data)
		return bytes.Equal(sum[:], r.Data)
	}
	return false
}

// Name is what logs and events show: the TLS version, "fallback" for a
// session in plain text after opportunistic STARTTLS failed, "none" for
// another session in plain text, "" when no session was reached.
func (t TLSInfo) Name() string {
	switch {
	case t.Version != "":
		return t.Version
	case t.Fallback:
		return "fallback"
	case t.Policy != "":
		return "none"
	}
	return ""
}

// tlsVersion spells a negotiated version for logs.
func tlsVersion(v uint16) string {
	switch v {
	case tls.VersionTLS13:
		return "TLSv1.3"
	case tls.VersionTLS12:
		return "TLSv1.2"
	case tls.VersionTLS11:
		return "TLSv1.1"
	case tls.VersionTLS10:
		return "TLSv1.0"
	}
	return fmt.Sprintf("0x%04x", v)
}

// refused is the attempt end of a hop its policy rules out, or nil.
func (s *session) refused() *attemptEnd {
	t := s.hop.TLS
	if t == nil || t.Refuse == "" {
		return nil
	}
	s.tls = TLSInfo{Policy: t.Policy, Failure: t.Refuse, Testing: t.Testing}
	if t.Testing {
		return nil
	}
	why := "MX host %s is not allowed by the domain's policy"
	if t.Refuse == FailDNSSECInvalid {
		why = "TLSA lookup for %s failed; not delivering without knowing its records"
	}
	err := policyErr(s, t.Refuse, why, s.hop.Host)
	return &attemptEnd{reply: smtpcodes.Classify(smtpcodes.StageConnect, err), opening: smtpcodes.StageConnect}
}

// noteTLS records the policy and the negotiated TLS version of the session.
func (s *session) noteTLS() {
	if t := s.hop.TLS; t != nil {
		s.tls.Policy, s.tls.Testing = t.Policy, t.Testing
	}
	tc, secure := s.conn.(*tls.Conn)
	if secure {
		s.tls.Version = tlsVersion(tc.ConnectionState().Version)
	}
	if s.tls.Policy == "" {
		s.tls.Policy = PolicyNone
		if secure {
			s.tls.Policy = PolicyOpportunistic
		}
	}
}

// verifiedConfig adjusts cfg for a hop with a DANE or MTA-STS policy: the
// check is ours (TLSA, or PKIX against the MX name), in testing mode a
// report only.
func (s *session) verifiedConfig(cfg *tls.Config) {
	t := s.hop.TLS
	if t == nil || (t.Policy != PolicyDANE && t.Policy != PolicyMTASTS) {
		return
	}
	cfg.VerifyConnection = s.verifyConnection
	if t.Testing && s.mode.verify {
		return // delivery.tls: required verifies as before
	}
	cfg.InsecureSkipVerify = true
}

// handshakeFailed turns a handshake error on a verified hop into 4.7.5.
func (s *session) handshakeFailed(err error) error {
	if !s.hop.TLS.mandatory() {
		return err
	}
	f := s.tls.Failure
	if f == "" {
		f = FailValidation
	}
	return policyErr(s, f, "%v", err)
}

// noSTARTTLS handles a server without STARTTLS on a verified hop: an error
// when TLS is mandatory, a noted failure in testing mode.
func (s *session) noSTARTTLS() error {
	t := s.hop.TLS
	switch {
	case t.mandatory():
		return policyErr(s, FailStartTLSNotSupported, "STARTTLS not offered")
	case t != nil && (t.Policy == PolicyDANE || t.Policy == PolicyMTASTS):
		s.fail(FailStartTLSNotSupported)
	}
	return nil
}
