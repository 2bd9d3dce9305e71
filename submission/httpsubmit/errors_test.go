package httpsubmit

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/submission"
)

const apiKey = "app.s3cretS3cret"

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// Each kind of bad request gets the status and enhanced code the README
// documents, and nothing is queued.
func TestErrorStatuses(t *testing.T) {
	e := start(t, envOpts{
		users:    []submission.User{{Username: "alice", PasswordHash: bcryptHash(t, "pw")}},
		keys:     []submission.APIKey{{Name: "app", KeyHash: bcryptHash(t, apiKey)}},
		insecure: true, maxBytes: 2000, maxRcpts: 3,
	})
	okRaw := "From: a@example.org\r\nTo: b@example.net\r\nSubject: s\r\n\r\nhi\r\n"
	bearer := "Bearer " + apiKey
	tests := []struct {
		name, query, ctype, auth, body string
		status                         int
		code                           string
	}{
		{"no credentials, untrusted", "", "message/rfc822", "", okRaw, 401, "5.7.0"},
		{"wrong key", "", "message/rfc822", "Bearer app.wrong", okRaw, 401, "5.7.8"},
		{"unknown key name", "", "message/rfc822", "Bearer nobody.s3cretS3cret", okRaw, 401, "5.7.8"},
		{"wrong password", "", "message/rfc822", basic("alice", "nope"), okRaw, 401, "5.7.8"},
		{"unknown scheme", "", "message/rfc822", "Digest x", okRaw, 401, "5.7.8"},
		{"api key", "", "message/rfc822", bearer, okRaw, 202, ""},
		{"smtp user", "", "message/rfc822", basic("alice", "pw"), okRaw, 202, ""},
		{"raw too big", "", "message/rfc822", bearer, okRaw + strings.Repeat("x", 2000), 413, "5.3.4"},
		{"json too big", "", "application/json", bearer, `{"from":"a@example.org","to":["b@example.net"],"text":"` + strings.Repeat("x", 2000) + `"}`, 413, "5.3.4"},
		{"bad json", "", "application/json", bearer, `{"from":`, 400, "5.6.0"},
		{"unknown json field", "", "application/json", bearer, `{"from":"a@example.org","to":["b@example.net"],"txet":"x"}`, 400, "5.6.0"},
		{"json without recipients", "", "application/json", bearer, `{"from":"a@example.org","text":"x"}`, 400, "5.6.0"},
		{"json bad from", "", "application/json", bearer, `{"from":"not an address","to":["b@example.net"]}`, 400, "5.6.0"},
		{"json reserved header", "", "application/json", bearer, `{"from":"a@example.org","to":["b@example.net"],"headers":{"Bcc":"x@y"}}`, 400, "5.6.0"},
		{"raw bare CR", "", "message/rfc822", bearer, "To: b@example.net\r\nFrom: a@example.org\r\n\r\nx\ry\r\n", 400, "5.7.0"},
		{"raw without recipients", "", "message/rfc822", bearer, "From: a@example.org\r\n\r\nx\r\n", 400, "5.5.1"},
		{"every recipient refused", "?to=nobody&to=also-nobody", "message/rfc822", bearer, okRaw, 422, "5.1.0"},
		{"bad sender", "?from=not-an-address", "message/rfc822", bearer, okRaw, 400, "5.1.7"},
		{"wrong content type", "", "text/plain", bearer, okRaw, 415, "5.6.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := countQueued(t, e)
			r := e.post(t, tc.query, tc.ctype, tc.auth, []byte(tc.body))
			if r.status != tc.status || r.err.Code != tc.code {
				t.Fatalf("got %d %+v, want %d %s", r.status, r.err, tc.status, tc.code)
			}
			queued := countQueued(t, e) - before
			if (tc.status == 202) != (queued == 1) {
				t.Errorf("status %d but %d messages queued", r.status, queued)
			}
			if tc.status == 401 && r.header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if tc.status == 422 && len(r.err.Recipients) != 2 {
				t.Errorf("422 lists %+v, want both recipients", r.err.Recipients)
			}
		})
	}
}

// countQueued counts messages accepted so far.
func countQueued(t *testing.T, e *testEnv) int { return int(e.obs.accepted.Load()) }

// A partly refused recipient list is queued for the rest and reported per
// recipient; past the recipient limit the rest get SMTP's 452.
func TestPartialRecipients(t *testing.T) {
	e := start(t, envOpts{trusted: true, maxRcpts: 2})
	r := e.post(t, "?to=a@example.net&to=bad&to=b@example.net&to=c@example.net", "message/rfc822", "", []byte("From: a@example.org\r\n\r\nx\r\n"))
	if r.status != http.StatusAccepted {
		t.Fatalf("got %d %+v", r.status, r.err)
	}
	want := []string{"a@example.net queued 250", "bad refused 553 5.1.3", "b@example.net queued 250", "c@example.net refused 452 4.5.3"}
	if len(r.ok.Recipients) != len(want) {
		t.Fatalf("recipients %+v", r.ok.Recipients)
	}
	for i, w := range want {
		got := r.ok.Recipients[i]
		if s := got.Address + " " + got.Status + " " + got.Reply; !strings.HasPrefix(s, w) {
			t.Errorf("recipient %d: %q, want %q...", i, s, w)
		}
	}
}

// Credentials over plain HTTP are refused unless allow_insecure_auth, as
// SMTP AUTH is.
func TestCredentialsNeedTLS(t *testing.T) {
	e := start(t, envOpts{keys: []submission.APIKey{{Name: "app", KeyHash: bcryptHash(t, apiKey)}}})
	r := e.post(t, "", "message/rfc822", "Bearer "+apiKey, []byte("From: a@example.org\r\nTo: b@example.net\r\n\r\nx\r\n"))
	if r.status != http.StatusForbidden || r.err.Code != "5.7.11" {
		t.Fatalf("got %d %+v, want 403 5.7.11", r.status, r.err)
	}
}

// Repeated failures lock the address out (429, Retry-After), shared with
// SMTP AUTH's lockout; then even the right key is refused.
func TestAuthLockout(t *testing.T) {
	e := start(t, envOpts{keys: []submission.APIKey{{Name: "app", KeyHash: bcryptHash(t, apiKey)}}, insecure: true, authMax: 3})
	body := []byte("From: a@example.org\r\nTo: b@example.net\r\n\r\nx\r\n")
	for i := 0; i < 3; i++ {
		if r := e.post(t, "", "message/rfc822", "Bearer app.wrong", body); r.status != 401 {
			t.Fatalf("failure %d: %d", i, r.status)
		}
	}
	r := e.post(t, "", "message/rfc822", "Bearer "+apiKey, body)
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
		t.Fatalf("got %d %+v (Retry-After %q), want 429 with Retry-After", r.status, r.err, r.header.Get("Retry-After"))
	}
}

// Basic guesses checked in parallel count against the lockout limit while
// they are checked, as SMTP AUTH guesses do (Acceptor.Login is the one
// check): of nine at once with a limit of three, at most three are checked
// (401), the others are refused at once (429).
func TestBasicGuessesInFlightCounted(t *testing.T) {
	const limit, parallel = 3, 9
	h, err := bcrypt.GenerateFromPassword([]byte("pw"), 8) // slow enough that guesses overlap
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, envOpts{users: []submission.User{{Username: "alice", PasswordHash: string(h)}}, insecure: true, authMax: limit})
	body := "From: a@example.org\r\nTo: b@example.net\r\n\r\nx\r\n"
	statuses := make(chan int, parallel)
	begin := make(chan struct{})
	for i := range parallel {
		go func() {
			<-begin
			req, err := http.NewRequest(http.MethodPost, e.url, strings.NewReader(body))
			if err != nil {
				statuses <- 0
				return
			}
			req.Header.Set("Content-Type", "message/rfc822")
			req.Header.Set("Authorization", basic("alice", fmt.Sprint("guess", i)))
			resp, err := e.client.Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	close(begin)
	checked := 0
	for range parallel {
		switch st := <-statuses; st {
		case http.StatusUnauthorized:
			checked++
		case http.StatusTooManyRequests:
		default:
			t.Errorf("parallel guess: status %d, want 401 or 429", st)
		}
	}
	if checked > limit {
		t.Fatalf("%d parallel guesses were checked, limit %d", checked, limit)
	}
}

// A key that worked stops working once the configuration changes its hash
// (SIGHUP), although its first check was remembered.
func TestReplacedKeyRefused(t *testing.T) {
	e := start(t, envOpts{keys: []submission.APIKey{{Name: "app", KeyHash: bcryptHash(t, apiKey)}}, insecure: true})
	body := []byte("From: a@example.org\r\nTo: b@example.net\r\n\r\nx\r\n")
	for i := 0; i < 2; i++ {
		if r := e.post(t, "", "message/rfc822", "Bearer "+apiKey, body); r.status != 202 {
			t.Fatalf("try %d: %d %+v", i, r.status, r.err)
		}
	}
	e.sub.SetPolicy(submission.Policy{APIKeys: []submission.APIKey{{Name: "app", KeyHash: bcryptHash(t, "app.new")}}})
	if r := e.post(t, "", "message/rfc822", "Bearer "+apiKey, body); r.status != 401 {
		t.Fatalf("old key after reload: %d, want 401", r.status)
	}
}

// A broken queue (disk gone) and a server shutting down both answer 503
// with Retry-After: try again later, nothing was taken.
func TestUnavailable(t *testing.T) {
	e := start(t, envOpts{trusted: true})
	e.store.Close()
	r := e.post(t, "", "message/rfc822", "", []byte("From: a@example.org\r\nTo: b@example.net\r\n\r\nx\r\n"))
	if r.status != http.StatusServiceUnavailable || r.err.Code != "4.3.0" || r.header.Get("Retry-After") == "" {
		t.Fatalf("broken queue: %d %+v", r.status, r.err)
	}

	e.srv.closing.Store(true)
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, strings.NewReader("x")))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("shutting down: %d %v", rec.Code, rec.Header())
	}
}

func TestStatusForTable(t *testing.T) {
	tests := []struct {
		code int
		enh  smtp.EnhancedCode
		want int
	}{
		{552, smtp.EnhancedCode{5, 3, 4}, 413},
		{451, smtp.EnhancedCode{4, 3, 0}, 503},
		{421, smtp.EnhancedCode{4, 3, 2}, 503},
		{421, smtp.EnhancedCode{4, 7, 0}, 429},
		{454, smtp.EnhancedCode{4, 7, 0}, 429},
		{530, smtp.EnhancedCode{5, 7, 0}, 401},
		{535, smtp.EnhancedCode{5, 7, 8}, 401},
		{538, smtp.EnhancedCode{5, 7, 11}, 403},
		{554, smtp.EnhancedCode{5, 7, 1}, 403},
		{452, smtp.EnhancedCode{4, 3, 1}, 503}, // the queue disk is below its reserve
		{452, smtp.EnhancedCode{4, 5, 3}, 422},
		{452, smtp.EnhancedCode{4, 7, 1}, 429}, // over a tenant's quota
		{451, smtp.EnhancedCode{4, 7, 1}, 503}, // a tenant paused: temporary, not forbidden
		{550, smtp.EnhancedCode{5, 7, 1}, 403}, // a From: domain the tenant may not send as
		{550, smtp.EnhancedCode{5, 1, 1}, 422},
		{553, smtp.EnhancedCode{5, 1, 7}, 400},
		{550, smtp.EnhancedCode{5, 7, 0}, 400},
		{554, smtp.EnhancedCode{5, 6, 0}, 400},
	}
	for _, tc := range tests {
		if got := statusFor(&smtp.SMTPError{Code: tc.code, EnhancedCode: tc.enh}); got != tc.want {
			t.Errorf("%d %v: %d, want %d", tc.code, tc.enh, got, tc.want)
		}
	}
}

// With submission.tls the API serves HTTPS, where keys need no
// allow_insecure_auth, and the Received header says HTTPS.
func TestHTTPS(t *testing.T) {
	e := start(t, envOpts{tls: true, keys: []submission.APIKey{{Name: "app", KeyHash: bcryptHash(t, apiKey)}}})
	r := e.post(t, "", "message/rfc822", "Bearer "+apiKey, []byte("From: a@example.org\r\nTo: b@example.net\r\n\r\nx\r\n"))
	if r.status != http.StatusAccepted {
		t.Fatalf("got %d %+v", r.status, r.err)
	}
	got := e.mx.WaitMessages(t, 1, 10*time.Second)[0]
	if !strings.Contains(string(got.Data), " with HTTPS id ") {
		t.Errorf("Received header: %q", got.Data)
	}
}

// A refusal over a tenant's quota asks the client to wait until the
// quota's window opens, not the fixed 30 s of other 429s.
func TestQuotaRefusalRetryAfter(t *testing.T) {
	w := httptest.NewRecorder()
	writeRefusal(w, &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 7, 1},
		Message: "Tenant billing: quota per_day used up until 2027-01-01T00:00:00Z; try again in 3600 s"})
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "3600" {
		t.Fatalf("status %d, Retry-After %q; want 429, 3600", w.Code, w.Header().Get("Retry-After"))
	}
}
