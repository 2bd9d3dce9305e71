package mtasts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"time"
)

// MaxPolicyBytes bounds a policy body (RFC 8461 section 3.3 suggests 64 KiB).
const MaxPolicyBytes = 64 << 10

// DefaultFetchTimeout bounds one policy fetch (section 3.3: at most 60s).
const DefaultFetchTimeout = 30 * time.Second

// Fetcher downloads policies. The zero value verifies against the system
// roots and dials the real host.
type Fetcher struct {
	// RootCAs replaces the system roots (tests, private CAs).
	RootCAs *x509.CertPool
	// Timeout bounds one fetch, connection to body; 0 means DefaultFetchTimeout.
	Timeout time.Duration
	// DialContext, if set, replaces the dialer (tests point it at loopback).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// URL is where the policy of domain is published.
func URL(domain string) string {
	return "https://mta-sts." + domain + "/.well-known/mta-sts.txt"
}

// Fetch downloads and parses the policy of domain.
func (f *Fetcher) Fetch(ctx context.Context, domain string) (Policy, error) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultFetchTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: f.RootCAs, MinVersion: tls.VersionTLS12},
		DialContext:       f.DialContext,
		DisableKeepAlives: true,
		Proxy:             nil, // the policy host is talked to directly
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport: tr,
		// Section 3.3: "HTTP 3xx redirects MUST NOT be followed".
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, URL(domain), nil)
	if err != nil {
		return Policy{}, fmt.Errorf("mtasts: %s: %w", domain, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return Policy{}, fmt.Errorf("mtasts: fetch %s: %w", URL(domain), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Policy{}, fmt.Errorf("mtasts: fetch %s: HTTP %s (redirects are not followed)", URL(domain), resp.Status)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "text/plain" {
		return Policy{}, fmt.Errorf("mtasts: fetch %s: media type %q, want text/plain", URL(domain), resp.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxPolicyBytes+1))
	if err != nil {
		return Policy{}, fmt.Errorf("mtasts: fetch %s: %w", URL(domain), err)
	}
	if len(body) > MaxPolicyBytes {
		return Policy{}, fmt.Errorf("mtasts: fetch %s: policy longer than %d bytes", URL(domain), MaxPolicyBytes)
	}
	p, err := ParsePolicy(body)
	if err != nil {
		return Policy{}, fmt.Errorf("%w (from %s)", err, URL(domain))
	}
	return p, nil
}
