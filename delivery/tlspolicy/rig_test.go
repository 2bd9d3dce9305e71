package tlspolicy

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/relayq/relayq/delivery/mtasts/ststest"
	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/smtptest"
)

// zone is a loopback DNS server answering from records in zone-file
// syntax; ad sets the AD bit on every answer, as a validating resolver
// does for signed zones.
type zone struct {
	mu   sync.Mutex
	recs []dns.RR
	ad   bool
	addr string
	asks map[uint16]int  // queries by type
	fail map[string]bool // lower-case fqdn -> SERVFAIL
}

func startZone(t *testing.T, ad bool, records ...string) *zone {
	t.Helper()
	z := &zone{ad: ad, asks: map[uint16]int{}, fail: map[string]bool{}}
	for _, r := range records {
		z.add(t, r)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(started) }, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		m.RecursionAvailable = true
		qn := q.Question[0]
		found := false
		z.mu.Lock()
		z.asks[qn.Qtype]++
		if z.fail[strings.ToLower(qn.Name)] {
			m.Rcode = dns.RcodeServerFailure
			z.mu.Unlock()
			_ = w.WriteMsg(m)
			return
		}
		for _, rr := range z.recs {
			if strings.EqualFold(rr.Header().Name, qn.Name) {
				found = true
				if rr.Header().Rrtype == qn.Qtype {
					m.Answer = append(m.Answer, rr)
				}
			}
		}
		m.AuthenticatedData = z.ad
		z.mu.Unlock()
		if !found {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	z.addr = pc.LocalAddr().String()
	return z
}

// asked is how many queries of type qtype the server answered.
func (z *zone) asked(qtype uint16) int {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.asks[qtype]
}

func (z *zone) add(t *testing.T, record string) {
	t.Helper()
	rr, err := dns.NewRR(record)
	if err != nil {
		t.Fatalf("bad test record %q: %v", record, err)
	}
	z.mu.Lock()
	z.recs = append(z.recs, rr)
	z.mu.Unlock()
}

// policyServer serves body as https://mta-sts.example.test/.well-known/mta-sts.txt
// with a certificate from its own CA, returned as a pool.
func policyServer(t *testing.T, body string) (*x509.CertPool, func(ctx context.Context, network, addr string) (net.Conn, error)) {
	t.Helper()
	srv := ststest.NewServer(t, "mta-sts.example.test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, body)
	}))
	return srv.Pool, srv.Dial
}

// world is a recipient domain example.test whose one MX, mx.example.test
// (127.0.0.1 in DNS), is an smtptest server.
type world struct {
	t      *testing.T
	zone   *zone
	mx     *smtptest.Server
	cert   *smtptest.Cert
	router *route.Router
	dialer *smtpclient.Dialer
}

func newWorld(t *testing.T, ad bool, mxOpts ...smtptest.Option) *world {
	t.Helper()
	cert, err := smtptest.NewCertFor("mx.example.test")
	if err != nil {
		t.Fatal(err)
	}
	mx := smtptest.NewServer(t, append([]smtptest.Option{smtptest.WithCert(cert)}, mxOpts...)...)
	_, port, _ := net.SplitHostPort(mx.Addr())
	z := startZone(t, ad,
		"example.test. 300 IN MX 10 mx.example.test.",
		"mx.example.test. 300 IN A 127.0.0.1",
	)
	w := &world{t: t, zone: z, mx: mx, cert: cert}
	w.router = route.NewRouter(route.Options{DNSServer: z.addr, Port: port})
	w.dialer = &smtpclient.Dialer{Hostname: "relay.test", ConnectTimeout: 5 * time.Second, CommandTimeout: 5 * time.Second,
		Resolver: w.router.Resolver(), RootCAs: cert.Pool}
	t.Cleanup(w.dialer.Close)
	return w
}

// withPolicy routes through r.
func (w *world) withPolicy(r *Resolver) {
	w.router = route.NewRouter(route.Options{DNSServer: w.zone.addr, Port: w.port(), TLSPolicy: r})
}

func (w *world) port() string { _, p, _ := net.SplitHostPort(w.mx.Addr()); return p }

// send delivers one message to a@example.test the way the engine does.
func (w *world) send() smtpclient.RcptResult {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hops, err := w.router.Lookup(ctx, "example.test")
	if err != nil {
		w.t.Fatal(err)
	}
	const body = "Subject: hi\r\n\r\nHello.\r\n"
	env := smtpclient.Envelope{From: "sender@relay.test", Size: int64(len(body)), Recipients: []smtpclient.RcptReq{{Address: "a@example.test"}}}
	return w.dialer.Deliver(ctx, hops, env, func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil })[0]
}

// tlsa is the TLSA record 3 1 1 of c for the test MX.
func tlsa311(c *smtptest.Cert) string {
	sum := sha256.Sum256(c.TLS.Leaf.RawSubjectPublicKeyInfo)
	return fmt.Sprintf("_25._tcp.mx.example.test. 300 IN TLSA 3 1 1 %s", hex.EncodeToString(sum[:]))
}
