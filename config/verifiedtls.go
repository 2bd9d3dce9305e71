package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// The delivery.mta_sts values.
const (
	MTASTSEnforce = "enforce" // obey each domain's own mode (the default)
	MTASTSTesting = "testing" // report what a policy would stop, never defer
	MTASTSOff     = "off"
)

// validateVerifiedTLS checks delivery.mta_sts, delivery.mta_sts_root_ca_file
// and delivery.dane.
func (l *loader) validateVerifiedTLS(d *Delivery) {
	l.oneOf("delivery.mta_sts", d.MTASTS, MTASTSEnforce, MTASTSTesting, MTASTSOff)
	if d.MTASTSRootCAFile != "" {
		if _, err := LoadCAFile(d.MTASTSRootCAFile); err != nil {
			l.failf("delivery.mta_sts_root_ca_file", "%w", err)
		}
	}
	if d.DANE {
		host, _, err := net.SplitHostPort(d.DNSServer)
		ip := net.ParseIP(host)
		if d.DNSServer == "" || err != nil || ip == nil || !ip.IsLoopback() {
			l.failf("delivery.dane", "true needs delivery.dns_server set to a DNSSEC-validating resolver on a loopback address (e.g. 127.0.0.1:53), not %q: only its AD bit can be trusted", d.DNSServer)
		}
	}
}

// LoadCAFile reads PEM certificates into a pool, for the trusted roots of
// MTA-STS policy fetches (delivery.mta_sts_root_ca_file, for tests).
func LoadCAFile(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: %w", path, errors.New("no PEM certificate in it"))
	}
	return pool, nil
}

// mtaSTSMode is delivery.mta_sts as matched: lower case, "" is enforce.
func mtaSTSMode(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return MTASTSEnforce
	}
	return s
}
