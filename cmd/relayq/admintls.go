package main

// The CLI's trust in an https admin API (admin.tls): which certificates a
// `relayq queue` command accepts from the relay it asks.

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
)

// adminTransport is the transport for an https admin URL that trusts the
// PEM certificates of caFile (--ca-file, else admin.tls.cert_file of the
// config read) besides the system's roots, in two ways:
//   - pinned: the relay serves exactly one of them, whatever name the URL
//     uses. The CLI asks 127.0.0.1 when admin.listen is 0.0.0.0:8025, and
//     the certificate names relay1.example.net; the relay's own
//     certificate, read from its own config, proves more than a name.
//   - as roots (a private CA, or a self-signed certificate), checked
//     against the URL's host name as any https client checks it.
func adminTransport(rawURL, caFile string) (*http.Transport, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("admin URL %q: %w", rawURL, err)
	}
	certs, err := readCerts(caFile)
	if err != nil {
		return nil, err
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	for _, c := range certs {
		roots.AddCert(c)
	}
	host := u.Hostname()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The check is VerifyConnection's: a pinned certificate needs no
		// host name, which the default check would insist on.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if err := verifyAdminPeer(cs.PeerCertificates, host, roots, certs); err != nil {
				return fmt.Errorf("the admin API's certificate is not trusted (trusted: %s and the system's roots): %w", caFile, err)
			}
			return nil
		},
	}
	return tr, nil
}

// verifyAdminPeer accepts chain when its leaf is one of pinned, or when it
// verifies for host under roots.
func verifyAdminPeer(chain []*x509.Certificate, host string, roots *x509.CertPool, pinned []*x509.Certificate) error {
	if len(chain) == 0 {
		return errors.New("the server sent no certificate")
	}
	leaf := chain[0]
	for _, p := range pinned {
		if bytes.Equal(p.Raw, leaf.Raw) {
			return nil
		}
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter})
	return err
}

// readCerts parses every CERTIFICATE block of a PEM file.
func readCerts(path string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("admin CA file: %w", err)
	}
	var certs []*x509.Certificate
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("admin CA file %s: %w", path, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("admin CA file %s: no PEM certificate in it", path)
	}
	return certs, nil
}
