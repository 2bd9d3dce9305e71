package authlimit

import (
	"net/netip"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
)

// TestLockoutPerAccount: guesses at one account from many addresses
// lock the account, not just each address.
func TestLockoutPerAccount(t *testing.T) {
	fake := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	l := New(3, 5*time.Minute, -1, fake)
	guess := func(ip string) bool {
		a := netip.MustParseAddr(ip)
		if _, ok := l.Begin(a, "user:victim"); !ok {
			return false
		}
		l.Finish(a, "user:victim", false)
		return true
	}
	for i, ip := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
		if !guess(ip) {
			t.Fatalf("guess %d from a fresh address refused", i)
		}
	}
	if guess("192.0.2.4") {
		t.Fatal("fourth guess at the account, from a fourth address, was evaluated")
	}
	if scope, ok := l.Begin(netip.MustParseAddr("192.0.2.4"), "user:other"); !ok {
		t.Fatalf("another account from the fourth address refused (%s)", scope)
	}
	fake.Advance(5*time.Minute + time.Second)
	if !guess("192.0.2.5") {
		t.Fatal("guess after the window refused")
	}
}

// TestAddressOnlyLeavesOtherAddressesAlone: with no account named, the
// guesses of one address lock that address alone, the right credential
// included, until its window ends; another address (the operator's
// loopback) is never refused because of them.
func TestAddressOnlyLeavesOtherAddressesAlone(t *testing.T) {
	fake := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	l := New(3, 5*time.Minute, -1, fake)
	remote, local := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("127.0.0.1")
	evaluated := 0
	for range 300 {
		if _, ok := l.Begin(remote, ""); ok {
			evaluated++
			l.Finish(remote, "", false)
		}
	}
	if evaluated != 3 {
		t.Fatalf("%d of 300 guesses evaluated, want 3", evaluated)
	}
	if scope, ok := l.Begin(remote, ""); ok || scope != Address {
		t.Fatalf("right credential after the limit: ok=%v scope=%q, want refused by address", ok, scope)
	}
	if got := l.RetryAfter(remote); got != 5*time.Minute {
		t.Fatalf("RetryAfter = %v, want 5m", got)
	}
	if _, ok := l.Begin(local, ""); !ok {
		t.Fatal("another address refused")
	}
	l.Release(local, "")
	fake.Advance(5*time.Minute + time.Second)
	if _, ok := l.Begin(remote, ""); !ok {
		t.Fatal("refused after the window")
	}
	if got := l.RetryAfter(remote); got != 0 {
		t.Fatalf("RetryAfter after the window = %v, want 0", got)
	}
}

// TestReleaseForgetsNothing: a success ended with Release leaves the
// address's failures counted, so a lesser credential that works cannot
// wipe the guesses made at a greater one.
func TestReleaseForgetsNothing(t *testing.T) {
	fake := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	l := New(3, 5*time.Minute, -1, fake)
	ip := netip.MustParseAddr("192.0.2.1")
	evaluated := 0
	for range 10 {
		if _, ok := l.Begin(ip, ""); ok {
			l.Release(ip, "")
		}
		if _, ok := l.Begin(ip, ""); ok {
			evaluated++
			l.Finish(ip, "", false)
		}
	}
	if evaluated != 3 {
		t.Fatalf("%d wrong guesses evaluated between successes, want 3", evaluated)
	}
}
