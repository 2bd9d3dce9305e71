package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/clock"
)

// TestLoginLockout: 300 wrong tokens at the login form, then the right
// one. Past the limit the form answers 429 with Retry-After and a page
// that says why and for how long, the right token included, and the
// API (sharing the limiter) refuses the address's bearer tokens too;
// once the lockout has passed on the injected clock, the login works.
func TestLoginLockout(t *testing.T) {
	clk := clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	lim := admin.NewTokenLimiter(clk)
	s := newSite(t, Options{Token: "w-secret", Clock: clk, Lockout: lim})
	b := s.browser()
	b.get("/ui/login")
	codes := map[int]int{}
	for i := range 300 {
		code, _ := b.post("/ui/login", url.Values{"token": {"guess-" + strconv.Itoa(i)}})
		codes[code]++
	}
	t.Logf("300 wrong logins: %v", codes)
	if codes[http.StatusUnauthorized] != admin.MaxTokenFailures {
		t.Fatalf("300 wrong logins answered %v, want %d×401 then 429", codes, admin.MaxTokenFailures)
	}
	code, body := b.post("/ui/login", url.Values{"token": {"w-secret"}})
	if code != http.StatusTooManyRequests || !strings.Contains(body, "Too many wrong tokens from your address") || !strings.Contains(body, "5 minutes") {
		t.Fatalf("right token during the lockout: %d\n%s", code, body)
	}
	req, _ := http.NewRequest("GET", s.srv.URL+"/api/v1/queue", nil)
	req.Header.Set("Authorization", "Bearer w-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("API with the right token from the locked address: %d Retry-After %q, want 429 with it", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	clk.Advance(admin.TokenLockout + time.Second)
	if code, body := b.post("/ui/login", url.Values{"token": {"w-secret"}}); code != http.StatusOK || strings.Contains(body, "Too many") {
		t.Fatalf("right token after the lockout: %d\n%s", code, body)
	}
}
