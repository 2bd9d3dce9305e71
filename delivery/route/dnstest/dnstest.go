// Package dnstest runs a real DNS server (miekg/dns) on a loopback UDP
// port with a zone a test writes in zone-file syntax, so that routing and
// the engine above it are tested against DNS on the wire, not a mock.
// Names not in the zone get NXDOMAIN; names with records, but not of the
// asked type, get NOERROR with no answer (NODATA). A negative answer
// carries the SOA record of the closest enclosing zone in the zone, if it
// has one, in its authority section (RFC 2308 section 3), as real servers
// do; resolvers cache the answer for its TTL.
package dnstest

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Zone is what the server answers: records in zone-file syntax per owner
// name, and forced response codes per name.
type Zone struct {
	Records []string       // "mx.example.test. 300 IN MX 10 a.example.test."
	Rcodes  map[string]int // fqdn → rcode (SERVFAIL, NXDOMAIN, ...)
	Queries *atomic.Int32  // counts the queries answered, when set
}

// Start runs a server for zone until the test ends and returns its
// "127.0.0.1:port".
func Start(t testing.TB, zone Zone) string {
	t.Helper()
	byName := map[string][]dns.RR{}
	for _, s := range zone.Records {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatalf("bad test record %q: %v", s, err)
		}
		name := strings.ToLower(rr.Header().Name)
		byName[name] = append(byName[name], rr)
	}
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		if zone.Queries != nil {
			zone.Queries.Add(1)
		}
		_ = w.WriteMsg(answer(req, zone.Rcodes, byName))
	})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: handler, NotifyStartedFunc: func() { close(started) }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.ActivateAndServe()
	}()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("DNS server did not start")
	}
	t.Cleanup(func() {
		_ = srv.Shutdown()
		<-done
	})
	return pc.LocalAddr().String()
}

// answer is the zone's reply to req.
func answer(req *dns.Msg, rcodes map[string]int, byName map[string][]dns.RR) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(req)
	m.RecursionAvailable = true
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	if rc, ok := rcodes[name]; ok {
		m.Rcode = rc
		return m
	} else if rrs, ok := byName[name]; !ok {
		m.Rcode = dns.RcodeNameError
	} else {
		for _, rr := range rrs {
			if rr.Header().Rrtype == q.Qtype {
				m.Answer = append(m.Answer, rr)
			}
		}
	}
	if len(m.Answer) == 0 {
		if soa := enclosingSOA(name, byName); soa != nil {
			m.Ns = append(m.Ns, soa)
		}
	}
	return m
}

// enclosingSOA is the SOA record of name or of the nearest name above it.
func enclosingSOA(name string, byName map[string][]dns.RR) dns.RR {
	for labels := dns.SplitDomainName(name); len(labels) > 0; labels = labels[1:] {
		for _, rr := range byName[dns.Fqdn(strings.Join(labels, "."))] {
			if rr.Header().Rrtype == dns.TypeSOA {
				return rr
			}
		}
	}
	return nil
}
