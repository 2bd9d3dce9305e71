package admin

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestWrongTokensLockTheAddressOut: a client guesses the admin token over
// a real socket, 300 times as fast as it can, then sends the right one.
// After MaxTokenFailures wrong tokens every request from its address is
// refused with 429 and Retry-After, the right token included, until the
// lockout window has passed on the handler's clock.
func TestWrongTokensLockTheAddressOut(t *testing.T) {
	e := newEnv(t, "the-right-admin-token")
	srv, l := e.serveLoopback(t)
	defer srv.Close()
	hc := &http.Client{Timeout: 10 * time.Second}
	get := func(tok string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+l.Addr().String()+"/api/v1/queue", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	codes := map[int]int{}
	for i := range 300 {
		codes[get("guess-"+strconv.Itoa(i)).StatusCode]++
	}
	t.Logf("300 wrong tokens: %v", codes)
	if codes[http.StatusUnauthorized] != MaxTokenFailures || codes[http.StatusTooManyRequests] != 300-MaxTokenFailures {
		t.Fatalf("300 wrong tokens answered %v, want %d×401 then 429", codes, MaxTokenFailures)
	}
	resp := get("the-right-admin-token")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("right token during the lockout: %d, want 429", resp.StatusCode)
	}
	if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); ra < 1 || ra > int(TokenLockout/time.Second) {
		t.Fatalf("Retry-After %q, want 1..%d seconds", resp.Header.Get("Retry-After"), int(TokenLockout/time.Second))
	}
	e.clock.Advance(TokenLockout - time.Minute)
	if code := get("the-right-admin-token").StatusCode; code != http.StatusTooManyRequests {
		t.Fatalf("right token a minute before the lockout ends: %d, want 429", code)
	}
	e.clock.Advance(time.Minute + time.Second)
	if code := get("the-right-admin-token").StatusCode; code != http.StatusOK {
		t.Fatalf("right token after the lockout: %d, want 200", code)
	}
}

// TestLockoutIsPerAddress: a remote guesser locked out does not lock out
// the operator on loopback; a request without a token guesses nothing and
// is not counted.
func TestLockoutIsPerAddress(t *testing.T) {
	e := newEnv(t, "the-right-admin-token")
	send := func(from, method, path, tok string) int {
		t.Helper()
		req := apiRequest(method, path, nil)
		req.RemoteAddr = from
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		w := newRecorder()
		e.h.ServeHTTP(w, req)
		return w.Code
	}
	for range 50 {
		send("198.51.100.7:4000", "GET", "/api/v1/queue", "")
	}
	if code := send("198.51.100.7:4001", "GET", "/api/v1/queue", "the-right-admin-token"); code != http.StatusOK {
		t.Fatalf("right token after 50 requests without one: %d, want 200", code)
	}
	for range 50 {
		send("198.51.100.7:4000", "GET", "/api/v1/queue", "wrong")
	}
	if code := send("198.51.100.7:4002", "GET", "/api/v1/queue", "the-right-admin-token"); code != http.StatusTooManyRequests {
		t.Fatalf("guesser with the right token: %d, want 429", code)
	}
	if code := send("127.0.0.1:5000", "GET", "/api/v1/queue", "the-right-admin-token"); code != http.StatusOK {
		t.Fatalf("loopback operator while a remote address is locked out: %d, want 200", code)
	}
	if code := send("[::ffff:198.51.100.7]:4003", "GET", "/api/v1/queue", "the-right-admin-token"); code != http.StatusTooManyRequests {
		t.Fatalf("the guesser's address in IPv4-mapped form: %d, want 429", code)
	}
}
