package smtpcodes

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestClassifyRealDNSFailures resolves against a miekg/dns server on
// loopback that answers SERVFAIL or NXDOMAIN, so the errors are the ones
// Go's resolver really returns.
func TestClassifyRealDNSFailures(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		m.Rcode = dns.RcodeServerFailure
		if q.Question[0].Name == "nx.example.com." {
			m.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })

	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, name := range []string{"servfail.example.com", "nx.example.com"} {
		_, err := r.LookupMX(ctx, name)
		if err == nil {
			t.Fatalf("LookupMX(%s) succeeded", name)
		}
		wantLocal(t, Classify(StageDNS, err), "4.4.3")
	}
}
