package httpsubmit

import (
	"net/http"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/submission"
)

// TestLockoutSurvivesValidKey: a client holding one valid API key uses it
// between Basic guesses at another account's password. The key's successes
// must not wipe the guesses: after the limit the rest are refused with 429
// (Retry-After) until the lockout window has passed.
func TestLockoutSurvivesValidKey(t *testing.T) {
	const maxFailures, rounds = 5, 40
	fake := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	e := start(t, envOpts{
		keys:     []submission.APIKey{{Name: "app", KeyHash: bcryptHash(t, apiKey)}},
		users:    []submission.User{{Username: "victim", PasswordHash: bcryptHash(t, "unguessable")}},
		insecure: true, authMax: maxFailures, clock: fake,
	})
	// An unsupported Content-Type is answered (415) only after the
	// credentials were checked, so nothing is queued.
	try := func(auth string) response { return e.post(t, "", "text/plain", auth, []byte("x")) }
	evaluated := 0
	for i := 0; i < rounds; i++ {
		try("Bearer " + apiKey)
		switch r := try(basic("victim", "guess")); r.status {
		case http.StatusUnauthorized:
			evaluated++
		case http.StatusTooManyRequests:
			if r.header.Get("Retry-After") == "" {
				t.Fatalf("guess %d: 429 without Retry-After", i)
			}
		default:
			t.Fatalf("guess %d: status %d %+v, want 401 or 429", i, r.status, r.err)
		}
	}
	t.Logf("HTTP: %d of %d wrong passwords evaluated (limit %d per window)", evaluated, rounds, maxFailures)
	if evaluated != maxFailures {
		t.Fatalf("%d wrong passwords evaluated, want %d: the valid key's logins reset the count", evaluated, maxFailures)
	}

	fake.Advance(5*time.Minute + time.Second)
	if r := try("Bearer " + apiKey); r.status != http.StatusUnsupportedMediaType {
		t.Fatalf("valid key after the window: %d %+v, want 415 (authenticated)", r.status, r.err)
	}
	if r := try(basic("victim", "guess")); r.status != http.StatusUnauthorized {
		t.Fatalf("guess after the window: %d, want 401", r.status)
	}
}
