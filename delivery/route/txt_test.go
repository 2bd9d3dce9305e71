package route

import (
	"context"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/relayq/relayq/delivery/route/dnstest"
)

// TXT answers keep their TTL; a name without records is no error (with
// the SOA's negative TTL), a server failure is.
func TestLookupTXT(t *testing.T) {
	srv := dnstest.Start(t, dnstest.Zone{
		Records: []string{
			"example.test. 600 IN SOA ns.example.test. h.example.test. 1 3600 600 86400 120",
			"_dmarc.example.test. 300 IN TXT \"v=DMARC1; \" \"p=none\"",
			"other.example.test. 60 IN A 192.0.2.1",
		},
		Rcodes: map[string]int{"_dmarc.broken.test.": dns.RcodeServerFailure},
	})
	r := NewRouter(Options{DNSServer: srv})
	ctx := context.Background()
	txts, ttl, err := r.LookupTXT(ctx, "_dmarc.example.test.")
	if err != nil || len(txts) != 1 || txts[0] != "v=DMARC1; p=none" || ttl != 300*time.Second {
		t.Errorf("present: %q %v %v", txts, ttl, err)
	}
	txts, ttl, err = r.LookupTXT(ctx, "_dmarc.nothing.example.test.")
	if err != nil || len(txts) != 0 || ttl != 120*time.Second {
		t.Errorf("NXDOMAIN: %q %v %v", txts, ttl, err)
	}
	txts, _, err = r.LookupTXT(ctx, "other.example.test.")
	if err != nil || len(txts) != 0 {
		t.Errorf("NODATA: %q %v", txts, err)
	}
	if _, _, err = r.LookupTXT(ctx, "_dmarc.broken.test."); err == nil {
		t.Error("SERVFAIL: no error")
	}
}
