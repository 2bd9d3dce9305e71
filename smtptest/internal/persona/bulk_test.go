package persona

import (
	"strings"
	"testing"
	"time"
)

const (
	signedAligned = "DKIM-Signature: v=1; a=ed25519-sha256; d=news.shop.example; s=s1;\r\n\tb=xx\r\nFrom: Shop <offers@shop.example>\r\n"
	signedOther   = "DKIM-Signature: v=1; d=esp.example; s=s1; b=xx\r\nFrom: offers@shop.example\r\n"
	oneClickHdr   = "List-Unsubscribe: <mailto:u@shop.example>, <https://shop.example/u/1>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"
)

// The bulk-sender checks of gmail, yahoo and outlook, with bulk=1/24h so
// every message counts as bulk: each refuses with the provider's text.
func TestBulkSenderChecks(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		persona, head string
		want          string // "" accepted, else the start of the reply text
	}{
		{"gmail", signedAligned + oneClickHdr, ""},
		{"gmail", "From: offers@shop.example\r\n" + oneClickHdr, "Unauthenticated email from shop.example is not accepted due to domain's DMARC policy"},
		{"gmail", signedOther + oneClickHdr, "Unauthenticated email from shop.example"},
		{"gmail", signedAligned, "Our system has detected that this message is likely unsolicited mail"},
		{"gmail", signedAligned + "List-Unsubscribe: <mailto:u@shop.example>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n", "Our system has detected"},
		{"yahoo", signedAligned + oneClickHdr, ""},
		{"yahoo", signedOther + oneClickHdr, "Message not accepted for policy reasons"},
		{"yahoo", signedAligned, "Message not accepted for policy reasons"},
		{"outlook", signedAligned, ""},
		{"outlook", signedOther, "Access denied, sending domain shop.example does not meet the required authentication level"},
	} {
		in, err := Builtin().NewSpec(Spec{Name: tc.persona, Params: map[string]string{"bulk": "1/24h"}})
		if err != nil {
			t.Fatal(err)
		}
		r := in.Decide(Seen{Stage: StageData, Now: now, IP: "192.0.2.1", Data: []byte(tc.head + "\r\nbody\r\n")})
		if (tc.want == "") != (r.Code == 0) || !strings.Contains(r.Text, tc.want) {
			t.Errorf("%s, %q: %d %s, want %q", tc.persona, tc.head, r.Code, r.Text, tc.want)
		}
	}
}

// By default the checks wait for bulk volume: 5,000 messages a day from
// one From: domain; from the 5,000th on unaligned mail is refused, from
// another domain it is not.
func TestBulkVolumeThreshold(t *testing.T) {
	in, err := Builtin().NewSpec(Spec{Name: "outlook", Params: map[string]string{"bulk": "3/24h", "rate": "1000/s"}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	seen := func(i int, from string) Seen {
		return Seen{Stage: StageData, Now: t0.Add(time.Duration(i) * time.Minute), IP: "192.0.2.1", Data: []byte("From: a@" + from + "\r\n\r\nx\r\n")}
	}
	for i := range 2 {
		if r := in.Decide(seen(i, "shop.example")); r.Code != 0 {
			t.Fatalf("message %d: %s", i, r.Text)
		}
	}
	if r := in.Decide(seen(3, "shop.example")); r.Code != 550 {
		t.Fatalf("past the volume: %d %s", r.Code, r.Text)
	}
	if r := in.Decide(seen(4, "other.example")); r.Code != 0 {
		t.Fatalf("another domain: %s", r.Text)
	}
	if r := in.Decide(seen(24*60+2, "shop.example")); r.Code != 0 {
		t.Fatalf("a day later: %s", r.Text)
	}
}

func TestPTRCheck(t *testing.T) {
	in, err := Builtin().NewSpec(Spec{Name: "gmail", Params: map[string]string{"require_ptr": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, has := range []bool{true, false} {
		r := in.Decide(Seen{Stage: StageMail, Now: time.Unix(1e9, 0), IP: "192.0.2.1", HasPTR: func() bool { return has }})
		if (r.Code == 550) == has || !has && !strings.HasPrefix(r.Text, "[192.0.2.1] The IP address sending this message does not have a PTR record setup") {
			t.Errorf("PTR %v: %d %s", has, r.Code, r.Text)
		}
	}
}
