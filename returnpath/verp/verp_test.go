package verp

import (
	"errors"
	"strings"
	"testing"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func signer(t testing.TB) *Signer {
	t.Helper()
	s, err := New("Bounces.Example.ORG", testKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAddressRoundTrip(t *testing.T) {
	s := signer(t)
	addr, err := s.Address("18ECAF2DCCF80C22C6A8", 3)
	if err != nil {
		t.Fatal(err)
	}
	local, domain, _ := strings.Cut(addr, "@")
	if domain != "bounces.example.org" || len(local) > 64 || len(local) != LocalLen {
		t.Fatalf("address %q: want a local part of %d (≤ 64) octets on bounces.example.org", addr, LocalLen)
	}
	for _, form := range []string{addr, strings.ToUpper(addr), addr + "."} {
		tag, err := s.Verify(form)
		if err != nil || tag != (Tag{QueueID: "18ECAF2DCCF80C22C6A8", Recipient: 3}) {
			t.Errorf("Verify(%q) = %+v, %v", form, tag, err)
		}
	}
}

func TestVerifyRefuses(t *testing.T) {
	s := signer(t)
	addr, _ := s.Address("18ECAF2DCCF80C22C6A8", 0)
	other, _ := New("bounces.example.org", []byte("another key of sixteen bytes or more"))
	forgedByOther, _ := other.Address("18ECAF2DCCF80C22C6A8", 0)
	flip := []byte(addr)
	if flip[5] == 'a' {
		flip[5] = 'b'
	} else {
		flip[5] = 'a'
	}
	cases := []struct {
		name, addr string
		want       error
	}{
		{"other domain", strings.Replace(addr, "bounces.example.org", "example.org", 1), ErrOtherDomain},
		{"no domain", "postmaster", ErrOtherDomain},
		{"postmaster", "postmaster@bounces.example.org", ErrForged},
		{"one character changed", string(flip), ErrForged},
		{"signed with another key", forgedByOther, ErrForged},
		{"truncated", addr[:10] + "@bounces.example.org", ErrForged},
		{"not base32", "rq-" + strings.Repeat("1", LocalLen-3) + "@bounces.example.org", ErrForged},
	}
	for _, c := range cases {
		if _, err := s.Verify(c.addr); !errors.Is(err, c.want) {
			t.Errorf("%s: Verify(%q) = %v, want %v", c.name, c.addr, err, c.want)
		}
	}
}

func TestNewAndAddressRefuseBadInput(t *testing.T) {
	if _, err := New("bounces.example.org", []byte("short")); err == nil {
		t.Error("a 5-byte key was accepted")
	}
	if _, err := New("", testKey); err == nil {
		t.Error("an empty domain was accepted")
	}
	s := signer(t)
	for _, id := range []string{"", "XYZ", "18ECAF2DCCF80C22C6"} {
		if _, err := s.Address(id, 0); err == nil {
			t.Errorf("queue ID %q was accepted", id)
		}
	}
	if _, err := s.Address("18ECAF2DCCF80C22C6A8", 70000); err == nil {
		t.Error("recipient index 70000 was accepted")
	}
}

// FuzzVerify feeds Verify arbitrary addresses: it never panics, and what
// it accepts is exactly what Address makes of the tag it returns.
func FuzzVerify(f *testing.F) {
	s := signer(f)
	good, _ := s.Address("18ECAF2DCCF80C22C6A8", 1)
	for _, seed := range []string{good, strings.ToUpper(good), "", "@", "rq-@bounces.example.org", "a@b@bounces.example.org"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		tag, err := s.Verify(addr)
		if err != nil {
			return
		}
		again, err := s.Address(tag.QueueID, tag.Recipient)
		if err != nil || !strings.EqualFold(strings.TrimSuffix(again, "."), strings.TrimSuffix(addr, ".")) {
			t.Fatalf("Verify(%q) accepted %+v, which Address makes %q (%v)", addr, tag, again, err)
		}
	})
}
