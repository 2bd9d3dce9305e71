package smtptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Cert is a self-signed certificate for 127.0.0.1, ::1 and localhost, made
// fresh each time so that no key material lives in the repository. Tests of
// any package use it for their TLS servers and clients.
type Cert struct {
	// TLS is the certificate with its private key, for a tls.Config.
	TLS tls.Certificate
	// Pool trusts the certificate, for clients.
	Pool *x509.CertPool
	// CertPEM and KeyPEM are the certificate and its PKCS#8 key in PEM form,
	// for programs that read files.
	CertPEM, KeyPEM []byte
}

// ServerConfig returns a server configuration presenting the certificate.
func (c *Cert) ServerConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{c.TLS}, MinVersion: tls.VersionTLS12}
}

// NewCert generates a fresh self-signed certificate for localhost,
// 127.0.0.1 and ::1.
func NewCert() (*Cert, error) { return NewCertFor("localhost") }

// NewCertFor generates a fresh self-signed certificate valid for the DNS
// names given (tests of MTA-STS and DANE name their MX hosts) and for
// 127.0.0.1 and ::1.
func NewCertFor(names ...string) (*Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("smtptest: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("smtptest: serial: %w", err)
	}
	// Validity uses the real clock: the client checks it against its own.
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "smtptest"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              names,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("smtptest: create certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("smtptest: parse certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("smtptest: marshal key: %w", err)
	}
	return &Cert{
		TLS:     tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		Pool:    pool,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// CertPool returns a pool holding the server's certificate, for clients to
// verify it; nil when the server has no TLS.
func (s *Server) CertPool() *x509.CertPool {
	if s.cert == nil {
		return nil
	}
	return s.cert.Pool
}

// CertPEM returns the server's certificate in PEM form (nil without TLS), so
// programs outside the test can trust it.
func (s *Server) CertPEM() []byte {
	if s.cert == nil {
		return nil
	}
	return append([]byte(nil), s.cert.CertPEM...)
}

// ClientTLSConfig returns a client configuration that verifies the server's
// certificate for 127.0.0.1; nil when the server has no TLS.
func (s *Server) ClientTLSConfig() *tls.Config {
	if s.cert == nil {
		return nil
	}
	return &tls.Config{RootCAs: s.cert.Pool, ServerName: "127.0.0.1"}
}
