package smtptest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// apiErrorOf decodes an API error body, failing the test unless it is
// exactly {"error": "..."}.
func apiErrorOf(t *testing.T, body string) string {
	t.Helper()
	var e apiError
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Error == "" {
		t.Fatalf("error body %q is not {\"error\": ...}: %v", body, err)
	}
	return e.Error
}

// An assertion must not pass by mistake: every endpoint refuses a
// parameter it does not take with 400 and a JSON error that names it.
func TestHTTPUnknownParameterIs400NamingIt(t *testing.T) {
	srv := NewServer(t)
	if err := send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, multipartBody); err != nil {
		t.Fatal(err)
	}
	base := startAPI(t, srv)
	for _, tc := range []struct{ method, path, param string }{
		{"GET", "/api/v1/messages/wait?too=nobody@example.test&timeout=2s", "too"}, // the typo that answered 200
		{"GET", "/api/v1/messages?subjct=reset", "subjct"},                         // that listed every message
		{"DELETE", "/api/v1/messages?subjct=Welcome", "subjct"},                    // that deleted them all
		{"GET", "/api/v1/messages/1?x=1", "x"},
		{"DELETE", "/api/v1/messages/1?force=1", "force"},
		{"GET", "/api/v1/messages/1/raw?x=1", "x"},
		{"GET", "/api/v1/messages/1/html?x=1", "x"},
		{"GET", "/api/v1/messages/1/attachments/0?x=1", "x"},
		{"GET", "/api/v1/messages/1/attachments/0/inline?x=1", "x"},
		{"GET", "/api/v1/attempts?recipient=b@dst.test", "recipient"},
		{"GET", "/api/v1/script?x=1", "x"},
		{"PUT", "/api/v1/script?x=1", "x"},
		{"GET", "/api/v1/events?x=1", "x"},
	} {
		status, body := do(t, tc.method, base+tc.path, "")
		if status != http.StatusBadRequest || !strings.Contains(apiErrorOf(t, body), `unknown query parameter "`+tc.param+`"`) {
			t.Errorf("%s %s: %d %s, want 400 naming %q", tc.method, tc.path, status, body, tc.param)
		}
	}
	if n := srv.MessageCount(); n != 1 {
		t.Fatalf("a refused DELETE deleted messages: %d left", n)
	}
}

func TestHTTPRepeatedOrEmptyParameterIs400(t *testing.T) {
	base := startAPI(t, NewServer(t))
	for _, q := range []string{"to=a&to=b", "subject=", "has=pdf", "text=&to=x"} {
		status, body := do(t, "GET", base+"/api/v1/messages?"+q, "")
		if status != http.StatusBadRequest {
			t.Errorf("?%s: %d %s, want 400", q, status, body)
			continue
		}
		apiErrorOf(t, body)
	}
}

// Every error is JSON, also the mux's own 404 and 405.
func TestHTTPRoutingErrorsAreJSON(t *testing.T) {
	base := startAPI(t, NewServer(t))
	status, body := do(t, "POST", base+"/api/v1/messages/5", "")
	if status != http.StatusMethodNotAllowed || !strings.Contains(apiErrorOf(t, body), "allowed: GET, DELETE") {
		t.Errorf("POST a message: %d %s", status, body)
	}
	status, body = do(t, "GET", base+"/api/v1/nothing", "")
	if status != http.StatusNotFound || !strings.Contains(apiErrorOf(t, body), "/api/v1/nothing") {
		t.Errorf("unknown path: %d %s", status, body)
	}
	status, body = do(t, "GET", base+"/api/v1/messages/99", "")
	if status != http.StatusNotFound || apiErrorOf(t, body) != `no message "99"` {
		t.Errorf("unknown message: %d %s", status, body)
	}
}

// sendThree sends the messages the filter tests look for: a welcome with an
// attachment, a reset whose only mention of "token" is base64-encoded, and
// a receipt in HTML.
func sendThree(t *testing.T, srv *Server) {
	t.Helper()
	for _, m := range []struct{ to, body string }{
		{"alice@example.test", multipartBody},
		{"bob@example.test", "Subject: Reset your password\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\nWW91ciB0b2tlbiBpcyA0Mg==\r\n"},
		{"carol@example.test", "Subject: Welcome\r\nContent-Type: text/html\r\n\r\n<p>Welcome aboard, Carol</p>\r\n"},
	} {
		if err := send(t, srv.Addr(), "app@src.test", []string{m.to}, m.body); err != nil {
			t.Fatal(err)
		}
	}
}

func listIDs(t *testing.T, base, query string) string {
	t.Helper()
	var got listResponse
	getJSON(t, base+"/api/v1/messages?"+query, 200, &got)
	var ids []string
	for _, m := range got.Messages {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

func TestHTTPFiltersTextAndAttachment(t *testing.T) {
	srv := NewServer(t)
	sendThree(t, srv)
	base := startAPI(t, srv)
	for query, want := range map[string]string{
		"text=token+is+42":    "2", // found in the decoded base64 part
		"text=ABOARD":         "3", // in the HTML part, case-insensitively
		"text=café+is":        "1", // in the quoted-printable ISO-8859-1 part
		"has=attachment":      "1",
		"text=nowhere":        "",
		"subject=welcome":     "3",
		"to=bob&text=welcome": "",
	} {
		if got := listIDs(t, base, query); got != want {
			t.Errorf("?%s: IDs %q, want %q", query, got, want)
		}
	}
}

func TestHTTPDeleteRemovesOnlyTheMatches(t *testing.T) {
	srv := NewServer(t)
	sendThree(t, srv)
	base := startAPI(t, srv)
	status, body := do(t, "DELETE", base+"/api/v1/messages?subject=Welcome", "")
	if status != 200 || !strings.Contains(body, `"deleted": 1`) {
		t.Fatalf("filtered DELETE: %d %s", status, body)
	}
	if got := listIDs(t, base, ""); got != "1,2" {
		t.Fatalf("after deleting subject=Welcome: %q left, want 1,2", got)
	}
	status, body = do(t, "DELETE", base+"/api/v1/messages/2", "")
	if status != 200 || !strings.Contains(body, `"deleted": 1`) {
		t.Fatalf("DELETE by id: %d %s", status, body)
	}
	if got := listIDs(t, base, ""); got != "1" {
		t.Fatalf("after deleting message 2: %q left, want 1", got)
	}
	if status, body := do(t, "DELETE", base+"/api/v1/messages/2", ""); status != 404 {
		t.Fatalf("deleting message 2 again: %d %s, want 404", status, body)
	}
	var attempts struct{ Attempts []AttemptRecord }
	getJSON(t, base+"/api/v1/attempts?rcpt=bob@", 200, &attempts)
	if len(attempts.Attempts) == 0 {
		t.Fatal("deleting a message forgot its attempts; they happened")
	}
	if status, body := do(t, "DELETE", base+"/api/v1/messages", ""); status != 200 || !strings.Contains(body, `"deleted": 1`) || srv.MessageCount() != 0 {
		t.Fatalf("DELETE all: %d %s, %d left", status, body, srv.MessageCount())
	}
}

func TestHTTPAttemptsByFilter(t *testing.T) {
	srv := NewServer(t, Reply("rcpt:nobody@=550 5.1.1 No such user"))
	send(t, srv.Addr(), "a@src.test", []string{"nobody@dst.test"}, testBody)
	base := startAPI(t, srv)
	var got struct{ Attempts []AttemptRecord }
	getJSON(t, base+"/api/v1/attempts?by=rule", 200, &got)
	if len(got.Attempts) != 1 || !strings.HasPrefix(got.Attempts[0].Reply, "550 5.1.1") {
		t.Fatalf("by=rule: %+v", got.Attempts)
	}
}

// FuzzStrictQuery feeds any query string to the list endpoint: it answers
// 200 only when every parameter is one the endpoint takes, else a JSON 400.
func FuzzStrictQuery(f *testing.F) {
	for _, s := range []string{"to=a", "too=a", "subject=&to=b", "has=attachment", "since=2030-01-01T00:00:00Z", "%zz", "to=a&to=a", "limit=5&text=x"} {
		f.Add(s)
	}
	h := NewServer(f).HTTPHandler()
	f.Fuzz(func(t *testing.T, raw string) {
		req := httptest.NewRequest("GET", "http://127.0.0.1/api/v1/messages", nil)
		req.URL.RawQuery = raw
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200:
			q, err := strictQuery(req, append(filterParams, paramLimit)...)
			if err != nil {
				t.Fatalf("200 for a query strictQuery refuses: %v", err)
			}
			for name := range q {
				if !slices.Contains(append(filterParams, paramLimit), name) {
					t.Fatalf("200 with unknown parameter %q", name)
				}
			}
		case 400:
			apiErrorOf(t, rec.Body.String())
		default:
			t.Fatalf("status %d for query %q", rec.Code, raw)
		}
	})
}

// pngBody carries a 1x1 PNG as an attachment.
const pngBody = "Subject: Chart\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n" +
	"--x\r\nContent-Type: text/plain\r\n\r\nSee the chart.\r\n" +
	"--x\r\nContent-Type: image/png\r\nContent-Disposition: attachment; filename=\"chart.png\"\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==\r\n--x--\r\n"

// Image attachments are served inline with their type, sandboxed; other
// types are not, so a message cannot make the page's origin serve its HTML.
func TestHTTPInlineImagesOnly(t *testing.T) {
	srv := NewServer(t)
	if err := send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, pngBody); err != nil {
		t.Fatal(err)
	}
	if err := send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, multipartBody); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.HTTPHandler())
	defer hs.Close()
	resp, err := http.Get(hs.URL + "/api/v1/messages/1/attachments/0/inline")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("inline PNG: %s %v", resp.Status, resp.Header)
	}
	status, body := do(t, "GET", hs.URL+"/api/v1/messages/2/attachments/0/inline", "")
	if status != http.StatusUnsupportedMediaType || !strings.Contains(apiErrorOf(t, body), "application/pdf is not shown inline") {
		t.Fatalf("inline PDF: %d %s", status, body)
	}
}
