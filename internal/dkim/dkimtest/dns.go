package dkimtest

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// DNS is a loopback DNS server serving key records.
type DNS struct {
	// Addr is host:port of the server (UDP).
	Addr string
	mu   sync.Mutex
	recs Records
}

// Set publishes (or replaces) one record.
func (d *DNS) Set(name, value string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recs[name] = value
}

func (d *DNS) get(name string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.recs[name]
	return v, ok
}

// ServeDNS starts a DNS server on a loopback UDP port that answers TXT
// queries for the names in recs (each value cut into 255-byte strings, as
// published) and NXDOMAIN for any other name. The server stops when the
// test ends.
func ServeDNS(t testing.TB, recs Records) *DNS {
	t.Helper()
	d := &DNS{recs: Records{}}
	for k, v := range recs {
		d.recs[k] = v
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		if len(q.Question) == 1 {
			qn := q.Question[0]
			v, ok := d.get(strings.TrimSuffix(strings.ToLower(qn.Name), "."))
			switch {
			case !ok:
				m.Rcode = dns.RcodeNameError
			case qn.Qtype == dns.TypeTXT:
				var parts []string
				for len(v) > 255 {
					parts, v = append(parts, v[:255]), v[255:]
				}
				m.Answer = append(m.Answer, &dns.TXT{
					Hdr: dns.RR_Header{Name: qn.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60},
					Txt: append(parts, v),
				})
			}
		}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	d.Addr = pc.LocalAddr().String()
	return d
}

// Resolver returns a resolver that sends every query to this server.
func (d *DNS) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dialer net.Dialer
		return dialer.DialContext(ctx, "udp", d.Addr)
	}}
}

// ParseZoneLine reads the record `relayq dkim keygen` prints,
// `NAME. IN TXT "part" "part"`, into Records form: the name without its
// trailing dot and the parts joined.
func ParseZoneLine(line string) (name, value string, ok bool) {
	name, quoted, ok := strings.Cut(strings.TrimSpace(line), " IN TXT ")
	if !ok {
		return "", "", false
	}
	for _, part := range strings.Split(quoted, `" "`) {
		value += strings.Trim(part, `"`)
	}
	return strings.TrimSuffix(name, "."), value, true
}
