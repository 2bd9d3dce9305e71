package preflight

import "testing"

// Alignment as RFC 7489 section 3.1 defines it, with the public suffix
// list's edge cases: multi-label ICANN suffixes (co.uk), private suffixes
// (blogspot.com, github.io), and a suffix itself, which has no
// organizational domain and so aligns only with its own name.
func TestAligned(t *testing.T) {
	for _, c := range []struct {
		from, id string
		strict   bool
		want     bool
	}{
		{"example.com", "example.com", true, true},
		{"Example.COM.", "example.com", true, true},
		{"news.example.com", "example.com", true, false},
		{"news.example.com", "example.com", false, true},
		{"example.com", "mail.example.com", false, true},
		{"a.b.example.com", "c.example.com", false, true},
		{"example.com", "example.net", false, false},
		{"example.co.uk", "co.uk", false, false},
		{"shop.example.co.uk", "example.co.uk", false, true},
		{"shop.example.co.uk", "other.co.uk", false, false},
		{"co.uk", "co.uk", false, true},
		{"co.uk", "example.co.uk", false, false},
		{"me.blogspot.com", "blogspot.com", false, false},
		{"a.me.blogspot.com", "me.blogspot.com", false, true},
		{"alice.github.io", "bob.github.io", false, false},
		{"example.com", "", false, false},
		{"", "example.com", false, false},
		{"example.com", "xample.com", false, false},
	} {
		if got := Aligned(c.from, c.id, c.strict); got != c.want {
			t.Errorf("Aligned(%q, %q, strict=%v) = %v, want %v", c.from, c.id, c.strict, got, c.want)
		}
	}
}

func TestOrgDomain(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"example.com", "example.com"},
		{"a.b.example.com", "example.com"},
		{"www.example.co.uk", "example.co.uk"},
		{"x.me.blogspot.com", "me.blogspot.com"},
		{"com", ""},
		{"co.uk", ""},
		{"", ""},
		{"a..b.com", ""},
	} {
		if got, _ := OrgDomain(c.in); got != c.want {
			t.Errorf("OrgDomain(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// The key the signer chooses is the From: domain's or its nearest
// parent's; whether that aligns is then Aligned's question.
func TestSigningDomain(t *testing.T) {
	keys := map[string]bool{"example.com": true, "co.uk": true, "mail.example.org": true}
	for _, c := range []struct{ from, want string }{
		{"example.com", "example.com"},
		{"news.example.com", "example.com"},
		{"example.co.uk", "co.uk"},
		{"example.org", ""},
		{"x.mail.example.org", "mail.example.org"},
		{"example.net", ""},
	} {
		if got := signingDomain(keys, c.from); got != c.want {
			t.Errorf("signingDomain(%q) = %q, want %q", c.from, got, c.want)
		}
	}
}
