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

// serverCert is a self-signed certificate for 127.0.0.1, ::1 and localhost,
// made fresh at every start so no key material lives in the repository.
type serverCert struct {
	tls  tls.Certificate
	pool *x509.CertPool
	pem  []byte
}

func newServerCert() (*serverCert, error) {
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
		DNSNames:              []string{"localhost"},
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
	return &serverCert{
		tls:  tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		pool: pool,
		pem:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
	}, nil
}

// CertPool returns a pool holding the server's certificate, for clients to
// verify it; nil when the server has no TLS.
func (s *Server) CertPool() *x509.CertPool {
	if s.cert == nil {
		return nil
	}
	return s.cert.pool
}

// CertPEM returns the server's certificate in PEM form (nil without TLS), so
// programs outside the test can trust it.
func (s *Server) CertPEM() []byte {
	if s.cert == nil {
		return nil
	}
	return append([]byte(nil), s.cert.pem...)
}

// ClientTLSConfig returns a client configuration that verifies the server's
// certificate for 127.0.0.1; nil when the server has no TLS.
func (s *Server) ClientTLSConfig() *tls.Config {
	if s.cert == nil {
		return nil
	}
	return &tls.Config{RootCAs: s.cert.pool, ServerName: "127.0.0.1"}
}
