package submission

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/emersion/go-sasl"

	"github.com/relayq/relayq/internal/clock"
	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// authCode logs in over SMTP AUTH PLAIN on a fresh connection and returns
// the reply that decided it: 235 on success, else the refusal's code (421
// when the connection itself was turned away).
func authCode(t *testing.T, addr, user, pw string) int {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	c := smtp.NewClient(nc)
	defer c.Close()
	if err := c.Hello("client.test"); err != nil {
		return smtpCode(err)
	}
	if err := c.Auth(sasl.NewPlainClient("", user, pw)); err != nil {
		return smtpCode(err)
	}
	return 235
}

// TestAuthLockoutSurvivesOtherAccountsSuccess: a client holding one valid
// account logs in with it between guesses at another account's password.
// Its successes must not wipe the guesses: after AuthMaxFailures wrong
// passwords the rest are refused (454, or 421 at connect) until the
// lockout window has passed.
func TestAuthLockoutSurvivesOtherAccountsSuccess(t *testing.T) {
	const maxFailures, rounds = 5, 40
	fake := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	env := startServer(t, func(o *Options) {
		o.Clock = fake
		o.AllowInsecureAuth = true
		o.AuthMaxFailures = maxFailures
		o.AuthLockout = 5 * time.Minute
		o.Policy = Policy{Users: []User{
			{Username: "mine", PasswordHash: hash(t, "known")},
			{Username: "victim", PasswordHash: hash(t, "unguessable")},
		}}
	})
	evaluated := 0
	for i := 0; i < rounds; i++ {
		authCode(t, env.addr, "mine", "known")
		switch code := authCode(t, env.addr, "victim", "guess"); code {
		case 535:
			evaluated++
		case 454, 421:
		default:
			t.Fatalf("guess %d: reply %d, want 535, 454 or 421", i, code)
		}
	}
	t.Logf("SMTP AUTH: %d of %d wrong passwords evaluated (limit %d per window)", evaluated, rounds, maxFailures)
	if evaluated != maxFailures {
		t.Fatalf("%d wrong passwords evaluated, want %d: the valid account's logins reset the count", evaluated, maxFailures)
	}

	// The window passes: guesses are evaluated again, and the valid
	// account logs in.
	fake.Advance(5*time.Minute + time.Second)
	if code := authCode(t, env.addr, "mine", "known"); code != 235 {
		t.Fatalf("valid login after the window: %d, want 235", code)
	}
	if code := authCode(t, env.addr, "victim", "guess"); code != 535 {
		t.Fatalf("guess after the window: %d, want 535", code)
	}
}

// An application sends with its one right API key from many requests at
// once (the providers' SDKs send batches in parallel): a key that matched
// before is no guess, so guesses in flight from the same address do not
// turn it away, while a lockout from failures still does.
func TestKnownKeyIsNoGuess(t *testing.T) {
	const maxFailures = 5
	env := startServer(t, func(o *Options) {
		o.AuthMaxFailures = maxFailures
		o.AuthLockout = 5 * time.Minute
		o.Policy = Policy{APIKeys: []APIKey{{Name: "app", KeyHash: hash(t, "app.s3cret")}}}
	})
	acc, ip := env.srv.Acceptor(), netip.MustParseAddr("192.0.2.7")
	if _, err := acc.LoginKey(ip, "app.s3cret"); err != nil {
		t.Fatalf("first login: %v", err)
	}
	for range maxFailures { // checks in flight, as parallel requests hold them
		if _, ok := env.srv.auth.Begin(ip, "key:app"); !ok {
			t.Fatal("a check in flight was refused")
		}
	}
	for i := range 20 {
		if _, err := acc.LoginKey(ip, "app.s3cret"); err != nil {
			t.Fatalf("request %d with the right key beside %d checks in flight: %v", i, maxFailures, err)
		}
	}
	for range maxFailures {
		env.srv.auth.Finish(ip, "key:app", false)
	}
	if _, err := acc.LoginKey(ip, "app.s3cret"); err == nil {
		t.Fatalf("the right key passed a lockout of %d failures", maxFailures)
	}
}
