package preflight

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/route/dnstest"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/identity"
)

// zone: example.test publishes DMARC (relaxed), strict.test a strict one,
// bare.test none, broken.test answers SERVFAIL.
func zone(queries *atomic.Int32) dnstest.Zone {
	return dnstest.Zone{
		Records: []string{
			"test. 600 IN SOA ns.test. h.test. 1 3600 600 86400 300",
			"_dmarc.example.test. 3600 IN TXT \"v=DMARC1; p=reject; rua=mailto:d@example.test\"",
			"_dmarc.strict.test. 3600 IN TXT \"v=DMARC1; p=quarantine; adkim=s; aspf=s\"",
			"bare.test. 300 IN A 192.0.2.1",
		},
		Rcodes:  map[string]int{"_dmarc.broken.test.": dns.RcodeServerFailure},
		Queries: queries,
	}
}

func checker(t testing.TB, dnsAddr string, clk clock.Clock, ch Checks, links Linker) *Checker {
	return New(Options{
		Streams:    map[string]Checks{"bulk": ch},
		KeyDomains: []string{"example.test", "strict.test", "bare.test", "broken.test"},
		DNS:        route.NewRouter(route.Options{DNSServer: dnsAddr}),
		Links:      links,
		Clock:      clk,
	})
}

func msg(from string, extra string) Message {
	return Message{Sender: identity.Sender{Stream: "bulk"}, QueueID: "0123456789ABCDEF0123", MailFrom: "app@" + from,
		Recipients: []string{"rcpt@dest.test"},
		Header:     []byte("From: Shop <news@" + from + ">\r\nTo: rcpt@dest.test\r\nSubject: hi\r\n" + extra)}
}

// The DMARC check against a DNS server on the wire: a record present
// passes, none is the configured finding, and SERVFAIL is only ever a
// warning, whatever the mode.
func TestDMARCOverDNS(t *testing.T) {
	srv := dnstest.Start(t, zone(nil))
	c := checker(t, srv, clock.NewFake(time.Unix(1e9, 0)), Checks{DMARC: Refuse}, nil)
	for _, tc := range []struct {
		from    string
		refused bool
		warned  bool
	}{
		{"example.test", false, false},
		{"news.example.test", false, false}, // the organizational domain's record
		{"bare.test", true, false},
		{"broken.test", false, true},
	} {
		v := c.Check(msg(tc.from, ""))
		if (v.Refusal != nil) != tc.refused || (len(v.Warnings) > 0) != tc.warned {
			t.Errorf("%s: refusal %+v warnings %+v", tc.from, v.Refusal, v.Warnings)
		}
	}
	v := c.Check(msg("bare.test", ""))
	if v.Refusal == nil || v.Refusal.Code != [3]int{5, 7, 26} || !strings.Contains(v.Refusal.Text, "_dmarc.bare.test") {
		t.Errorf("absent record: %+v", v.Refusal)
	}
}

// A record is looked up once per domain and kept for its TTL: the hot
// path asks DNS only for a domain it has not seen, and once stale the old
// answer serves while one background lookup renews it.
func TestDMARCCachedForTTL(t *testing.T) {
	var q atomic.Int32
	srv := dnstest.Start(t, zone(&q))
	clk := clock.NewFake(time.Unix(1e9, 0))
	c := checker(t, srv, clk, Checks{DMARC: Warn}, nil)
	for range 5 {
		c.Check(msg("example.test", ""))
	}
	if n := q.Load(); n != 1 {
		t.Fatalf("5 messages: %d queries, want 1", n)
	}
	clk.Advance(59 * time.Minute)
	c.Check(msg("example.test", ""))
	c.Wait()
	if n := q.Load(); n != 1 {
		t.Fatalf("within the TTL: %d queries, want 1", n)
	}
	clk.Advance(2 * time.Minute)
	if v := c.Check(msg("example.test", "")); len(v.Warnings) != 0 {
		t.Errorf("stale answer: %+v", v.Warnings)
	}
	c.Wait()
	if n := q.Load(); n != 2 {
		t.Fatalf("past the TTL: %d queries, want 2", n)
	}
	// An absent record asks for the domain and its organizational domain
	// once each, then not again.
	for range 3 {
		c.Check(msg("x.bare.test", ""))
	}
	if n := q.Load(); n != 4 {
		t.Errorf("absent: %d queries, want 4", n)
	}
}

// DKIM alignment follows the signer's choice of key and the record's
// adkim: a parent's key aligns relaxed, not strict.
func TestDKIMAlignmentCheck(t *testing.T) {
	srv := dnstest.Start(t, zone(nil))
	c := checker(t, srv, clock.NewFake(time.Unix(1e9, 0)), Checks{DKIMAlignment: Refuse, DMARC: Warn}, nil)
	for _, tc := range []struct {
		from    string
		refused bool
	}{
		{"example.test", false},
		{"news.example.test", false},
		{"news.strict.test", true},
		{"elsewhere.test", true},
	} {
		v := c.Check(msg(tc.from, ""))
		if (v.Refusal != nil) != tc.refused {
			t.Errorf("%s: refusal %+v", tc.from, v.Refusal)
		}
		if v.Refusal != nil && (v.Refusal.Check != CheckDKIM || !strings.Contains(v.Refusal.Text, "dkim.keys")) {
			t.Errorf("%s: refusal names %q: %s", tc.from, v.Refusal.Check, v.Refusal.Text)
		}
	}
	if v := c.Check(msg("elsewhere.test", "")); len(v.Warnings) != 1 || v.Warnings[0].Check != CheckDMARC {
		t.Errorf("elsewhere.test: warnings %+v, want dmarc (no record)", v.Warnings)
	}
}

type fixedLinks struct{}

func (fixedLinks) Link(s identity.Sender, id, rcpt string) (string, error) {
	return fmt.Sprintf("https://u.example.test/u/%s-%s-%s", s.Stream, id, rcpt), nil
}

func TestOneClick(t *testing.T) {
	const good = "List-Unsubscribe: <mailto:u@example.test>,\r\n <https://example.test/u/1>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"
	for _, tc := range []struct {
		name    string
		mode    Mode
		extra   string
		rcpts   int
		refused bool
		warned  bool
		add     string
	}{
		{"present", Refuse, good, 1, false, false, ""},
		{"missing, refuse", Refuse, "", 1, true, false, ""},
		{"missing, warn", Warn, "", 1, false, true, ""},
		{"mailto only", Refuse, "List-Unsubscribe: <mailto:u@example.test>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n", 1, true, false, ""},
		{"no post", Refuse, "List-Unsubscribe: <https://example.test/u/1>\r\n", 1, true, false, ""},
		{"missing, add", Add, "", 1, false, false, "List-Unsubscribe: <https://u.example.test/u/bulk-0123456789ABCDEF0123-rcpt@dest.test>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"},
		{"present, add", Add, good, 1, false, false, ""},
		{"own broken fields, add", Add, "List-Unsubscribe: <mailto:u@example.test>\r\n", 1, true, false, ""},
		{"two recipients, add", Add, "", 2, true, false, ""},
	} {
		c := checker(t, "127.0.0.1:1", clock.NewFake(time.Unix(1e9, 0)), Checks{OneClick: tc.mode}, fixedLinks{})
		m := msg("example.test", tc.extra)
		if tc.rcpts == 2 {
			m.Recipients = append(m.Recipients, "other@dest.test")
		}
		v := c.Check(m)
		if (v.Refusal != nil) != tc.refused || (len(v.Warnings) > 0) != tc.warned || string(v.Add) != tc.add {
			t.Errorf("%s: refusal %+v warnings %+v add %q", tc.name, v.Refusal, v.Warnings, v.Add)
		}
	}
}

// A stream without checks costs nothing; one with every check on, with
// the DMARC answer cached, is a header scan and a map lookup.
func BenchmarkCheckCached(b *testing.B) {
	srv := dnstest.Start(b, zone(nil))
	c := checker(b, srv, clock.NewFake(time.Unix(1e9, 0)), Checks{DKIMAlignment: Refuse, DMARC: Refuse, OneClick: Add}, fixedLinks{})
	m := msg("news.example.test", "Message-ID: <1@example.test>\r\nDate: Sun, 6 Dec 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n")
	c.Check(m)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if v := c.Check(m); v.Refusal != nil {
			b.Fatal(v.Refusal.Text)
		}
	}
}

func BenchmarkCheckOff(b *testing.B) {
	c := New(Options{Streams: map[string]Checks{"bulk": {DMARC: Warn}}})
	m := msg("news.example.test", "")
	m.Sender.Stream = "transactional"
	for b.Loop() {
		c.Check(m)
	}
}
