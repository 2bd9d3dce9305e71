package persona

import (
	"bytes"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/publicsuffix"
)

// The bulk-sender checks Gmail, Yahoo and Outlook.com apply since 2024
// and 2025: unaligned (no DKIM signature whose d= aligns with the From:
// domain, RFC 7489 relaxed; unsigned mail included), oneclick (bulk mail
// without RFC 8058 one-click unsubscribe) and ptr (a client address
// without reverse DNS). With bulk (N/PERIOD), unaligned and oneclick
// apply from the Nth message of a From: domain in PERIOD on, as the
// providers apply them to bulk senders only.

// bulkCheck is one of them.
type bulkCheck struct {
	kind   Kind
	on     bool
	limit  int
	window time.Duration
	sent   map[string][]time.Time // From: domain -> accepted messages
}

func newBulkCheck(kind Kind, stage Stage, f map[string]string) (decider, error) {
	on, err := strconv.ParseBool(f["when"])
	if err != nil {
		return nil, fmt.Errorf("%s: want when true or false", kind)
	}
	want := StageData
	if kind == KindPTR {
		want = StageMail
	}
	if stage != want {
		return nil, fmt.Errorf("%s: checked at %s", kind, want)
	}
	c := &bulkCheck{kind: kind, on: on, sent: map[string][]time.Time{}}
	if b := f["bulk"]; b != "" {
		if c.limit, c.window, err = parseLimit(b); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *bulkCheck) decide(s Seen) (bool, time.Duration) {
	if !c.on {
		return false, 0
	}
	if c.kind == KindPTR {
		return s.HasPTR != nil && !s.HasPTR(), 0
	}
	from := fromDomain(s.Data)
	if c.limit > 0 && len(c.recent(from, s.Now))+1 < c.limit {
		return false, 0
	}
	if c.kind == KindOneClick {
		return !oneClick(s.Data), 0
	}
	return !alignedSignature(s.Data, from), 0
}

// commit counts an accepted message against its From: domain.
func (c *bulkCheck) commit(s Seen) {
	if c.limit > 0 && c.kind != KindPTR {
		from := fromDomain(s.Data)
		c.sent[from] = append(c.recent(from, s.Now), s.Now)
	}
}

func (c *bulkCheck) recent(from string, now time.Time) []time.Time {
	times := c.sent[from]
	for len(times) > 0 && !now.Before(times[0].Add(c.window)) {
		times = times[1:]
	}
	c.sent[from] = times
	return times
}

// headerFields returns the unfolded values of the header fields named
// name (lower case) in data's header section.
func headerFields(data []byte, name string) []string {
	var out []string
	cur := -1
	for line := range bytes.Lines(data) {
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			if cur >= 0 {
				out[cur] += string(line)
			}
			continue
		}
		cur = -1
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && strings.EqualFold(string(k), name) {
			out = append(out, string(v))
			cur = len(out) - 1
		}
	}
	return out
}

// fromDomain is the From: field's domain, lower case, "" for none.
func fromDomain(data []byte) string {
	fs := headerFields(data, "from")
	if len(fs) == 0 {
		return ""
	}
	a, err := mail.ParseAddress(strings.TrimSpace(fs[0]))
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(a.Address, '@')
	return strings.ToLower(strings.TrimSuffix(a.Address[i+1:], "."))
}

// alignedSignature reports whether a DKIM-Signature field's d= aligns
// with from (RFC 7489 section 3.1.1, relaxed). It does not verify the
// signature: fakemx tests what a sender sends, not the crypto.
func alignedSignature(data []byte, from string) bool {
	orgFrom, err := publicsuffix.EffectiveTLDPlusOne(from)
	if from == "" || err != nil {
		return false
	}
	for _, sig := range headerFields(data, "dkim-signature") {
		for tag := range strings.SplitSeq(sig, ";") {
			k, v, _ := strings.Cut(tag, "=")
			if strings.TrimSpace(k) != "d" {
				continue
			}
			d := strings.ToLower(strings.TrimSuffix(strings.Join(strings.Fields(v), ""), "."))
			if org, err := publicsuffix.EffectiveTLDPlusOne(d); err == nil && org == orgFrom {
				return true
			}
		}
	}
	return false
}

// oneClick reports whether the message carries RFC 8058 one-click
// unsubscribe: an https URI in List-Unsubscribe and
// List-Unsubscribe-Post: List-Unsubscribe=One-Click.
func oneClick(data []byte) bool {
	post := headerFields(data, "list-unsubscribe-post")
	lu := headerFields(data, "list-unsubscribe")
	if len(post) == 0 || strings.TrimSpace(post[0]) != "List-Unsubscribe=One-Click" || len(lu) == 0 {
		return false
	}
	return strings.Contains(strings.ToLower(lu[0]), "<https://")
}
