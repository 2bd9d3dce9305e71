package unsubscribe

import (
	"strings"
	"testing"

	"github.com/relayq/relayq/internal/identity"
)

func testSigner(t testing.TB) *Signer {
	s, err := New("https://u.example.org/", []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var target = Target{Sender: identity.Sender{Tenant: "acme", Stream: "bulk"}, QueueID: "18ECAF2DCCF80C22C6A8", Recipient: "bob@example.net"}

func TestTokenRoundTrip(t *testing.T) {
	s := testSigner(t)
	link, err := s.Link(target.Sender, target.QueueID, target.Recipient)
	if err != nil {
		t.Fatal(err)
	}
	tok, ok := strings.CutPrefix(link, "https://u.example.org/u/")
	if !ok {
		t.Fatalf("link %q", link)
	}
	got, err := s.Verify(tok)
	if err != nil || got != target {
		t.Fatalf("Verify = %+v, %v", got, err)
	}
}

// Every changed character, a truncation, another key's token: forged.
func TestTokenTampered(t *testing.T) {
	s := testSigner(t)
	tok, _ := s.Token(target)
	for i := range tok {
		for _, c := range []byte{'A', 'b', '-', '_'} {
			if tok[i] == c {
				continue
			}
			bad := tok[:i] + string(c) + tok[i+1:]
			if _, err := s.Verify(bad); err == nil {
				t.Fatalf("changed at %d: %q verified", i, bad)
			}
		}
	}
	for _, bad := range []string{"", tok[:len(tok)-1], tok + "A", tok + "=", strings.Repeat("A", 5000)} {
		if _, err := s.Verify(bad); err == nil {
			t.Errorf("%q verified", bad)
		}
	}
	other, _ := New("https://u.example.org", []byte("another key of sixteen+ bytes"))
	if _, err := other.Verify(tok); err == nil {
		t.Error("another key's signer verified the token")
	}
}

func TestNewRefuses(t *testing.T) {
	if _, err := New("http://u.example.org", []byte("0123456789abcdef")); err == nil {
		t.Error("http base accepted")
	}
	if _, err := New("https://u.example.org", []byte("short")); err == nil {
		t.Error("short key accepted")
	}
	s := testSigner(t)
	if _, err := s.Token(Target{QueueID: "nothex", Recipient: "a@b"}); err == nil {
		t.Error("bad queue ID accepted")
	}
}

// Tokens come from anyone: Verify never panics, and what it accepts it
// could have made.
func FuzzVerify(f *testing.F) {
	s := testSigner(f)
	tok, _ := s.Token(target)
	f.Add(tok)
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, tok string) {
		got, err := s.Verify(tok)
		if err != nil {
			return
		}
		again, err := s.Token(got)
		if err != nil || again != tok {
			t.Fatalf("accepted %q, which re-signs as %q (%v)", tok, again, err)
		}
	})
}
