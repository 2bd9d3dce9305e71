package tlspolicy

import (
	"testing"

	"github.com/miekg/dns"

	"github.com/relayq/relayq/delivery/mtasts"
)

// Usable never panics on any TLSA record a resolver could hand back, and
// keeps only DANE-TA/DANE-EE records whose data fits the matching type.
func FuzzUsable(f *testing.F) {
	f.Add(uint8(3), uint8(1), uint8(1), "8cb0fc6c527506a053f4f14c8464bebbd6dede2738d11468dd953d7d6a3021f1")
	f.Add(uint8(2), uint8(0), uint8(0), "00")
	f.Add(uint8(1), uint8(1), uint8(2), "zz")
	f.Fuzz(func(t *testing.T, usage, selector, mtype uint8, data string) {
		rec := &dns.TLSA{Usage: usage, Selector: selector, MatchingType: mtype, Certificate: data}
		for _, u := range Usable([]*dns.TLSA{rec}) {
			if (u.Usage != 2 && u.Usage != 3) || u.Selector > 1 || u.MatchingType > 2 {
				t.Fatalf("kept an unusable record %+v", u)
			}
			if (u.MatchingType == 1 && len(u.Data) != 32) || (u.MatchingType == 2 && len(u.Data) != 64) || len(u.Data) == 0 {
				t.Fatalf("kept data of the wrong length: %+v", u)
			}
		}
	})
}

// A stored policy comes from disk: decoding never panics, and what it
// accepts is a policy the parser would accept.
func FuzzDecodeCached(f *testing.F) {
	f.Add([]byte(`{"mode":"enforce","mx":["mx.example.test"],"max_age":86400,"id":"1","fetched":"2026-11-30T12:00:00Z"}`))
	f.Add([]byte(`{"mode":"enforce\nmx: evil","mx":[],"max_age":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok, err := decodeCached(b)
		if err == nil && (!ok || c.Policy.MaxAge < 0 || (c.Policy.Mode != mtasts.ModeNone && len(c.Policy.MX) == 0)) {
			t.Fatalf("accepted %+v", c)
		}
	})
}
