package mtasts

import (
	"context"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/mtasts/ststest"
	"github.com/relayq/relayq/smtptest"
)

// policyServer is an HTTPS server with its own CA, answering for
// mta-sts.example.org; the returned Fetcher trusts the CA and dials it
// whatever the host name.
type policyServer struct {
	hits atomic.Int32
}

func newPolicyServer(t *testing.T, h http.HandlerFunc) (*policyServer, *Fetcher) {
	t.Helper()
	ps := &policyServer{}
	srv := ststest.NewServer(t, "mta-sts.example.org", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps.hits.Add(1)
		h(w, r)
	}))
	return ps, &Fetcher{RootCAs: srv.Pool, Timeout: 5 * time.Second, DialContext: srv.Dial}
}

// dialTo dials addr whatever address is asked for, as if DNS said so.
func dialTo(addr string) func(ctx context.Context, network, _ string) (net.Conn, error) {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

const goodPolicy = "version: STSv1\nmode: enforce\nmx: mx.example.org\nmax_age: 86400\n"

func serve(body, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/mta-sts.txt" || r.Host != "mta-sts.example.org" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Write([]byte(body))
	}
}

func TestFetch(t *testing.T) {
	_, f := newPolicyServer(t, serve(goodPolicy, "text/plain; charset=utf-8"))
	p, err := f.Fetch(context.Background(), "example.org")
	if err != nil || p.Mode != ModeEnforce || !p.Matches("mx.example.org") {
		t.Fatalf("Fetch = %+v, %v", p, err)
	}
}

func TestFetchRefuses(t *testing.T) {
	tests := []struct {
		name    string
		h       http.HandlerFunc
		mod     func(*Fetcher)
		wantErr string
	}{
		{"a redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://mta-sts.example.org/elsewhere.txt", http.StatusFound)
		}, nil, "302"},
		{"a policy over 64 KiB", serve(goodPolicy+"x: "+strings.Repeat("y", MaxPolicyBytes)+"\n", "text/plain"), nil, "longer than"},
		{"another media type", serve(goodPolicy, "text/html"), nil, "media type"},
		{"a 404", http.NotFound, nil, "404"},
		{"an invalid policy", serve("version: STSv1\n", "text/plain"), nil, "mode"},
		{"an untrusted certificate", serve(goodPolicy, "text/plain"), func(f *Fetcher) { f.RootCAs = x509.NewCertPool() }, "certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, f := newPolicyServer(t, tt.h)
			if tt.mod != nil {
				tt.mod(f)
			}
			p, err := f.Fetch(context.Background(), "example.org")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Fetch = %+v, %v; want an error saying %q", p, err, tt.wantErr)
			}
			if n := ps.hits.Load(); n > 1 {
				t.Fatalf("%d requests: a redirect was followed", n)
			}
		})
	}
	// The handler holds the request until the subtest is over (the
	// server's Close waits for it). One that returned when the client hung
	// up would send an empty 200 at the client's TLS close_notify, and the
	// transport takes a response that comes in before it closes the socket.
	t.Run("a server that never answers", func(t *testing.T) {
		hung := make(chan struct{})
		_, f := newPolicyServer(t, func(http.ResponseWriter, *http.Request) { <-hung })
		t.Cleanup(func() { close(hung) }) // runs before the server's Close
		f.Timeout = 200 * time.Millisecond
		if p, err := f.Fetch(context.Background(), "example.org"); err == nil || !strings.Contains(err.Error(), "deadline") {
			t.Fatalf("Fetch = %+v, %v; want an error saying %q", p, err, "deadline")
		}
	})
}

// A trusted certificate for another name is refused: verification is of
// mta-sts.DOMAIN, not just of the chain.
func TestFetchRefusesCertificateForAnotherName(t *testing.T) {
	c, err := smtptest.NewCert() // for localhost and 127.0.0.1 only
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(serve(goodPolicy, "text/plain"))
	srv.TLS = c.ServerConfig()
	srv.StartTLS()
	defer srv.Close()
	f := &Fetcher{RootCAs: c.Pool, DialContext: dialTo(srv.Listener.Addr().String())}
	if p, err := f.Fetch(context.Background(), "example.org"); err == nil || !strings.Contains(err.Error(), "mta-sts.example.org") {
		t.Fatalf("Fetch = %+v, %v; want a certificate name error", p, err)
	}
}
