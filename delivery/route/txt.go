package route

import (
	"context"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// LookupTXT returns name's TXT records, each one's strings joined (RFC
// 7208 section 3.3), through the same DNS servers as MX lookups, with
// the TTL to keep the answer: the records' smallest, or the negative
// answer's (RFC 2308) when there are none. NXDOMAIN and NODATA are no
// error; an error is DNS trouble (every server failed or refused). Not
// cached here: the caller keeps the answer for its TTL.
func (r *Router) LookupTXT(ctx context.Context, name string) ([]string, time.Duration, error) {
	resp, err := r.query(ctx, name, dns.TypeTXT)
	if err != nil {
		if resp != nil && resp.Rcode == dns.RcodeNameError {
			return nil, negativeTTL(resp), nil
		}
		return nil, 0, err
	}
	var out []string
	var ttl time.Duration
	for _, rr := range resp.Answer {
		if txt, ok := rr.(*dns.TXT); ok {
			if t := time.Duration(txt.Hdr.Ttl) * time.Second; len(out) == 0 || t < ttl {
				ttl = t
			}
			out = append(out, strings.Join(txt.Txt, ""))
		}
	}
	if len(out) == 0 {
		ttl = negativeTTL(resp)
	}
	return out, ttl, nil
}
