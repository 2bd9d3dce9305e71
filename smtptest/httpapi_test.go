package smtptest

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// startAPI serves srv's HTTP API on a loopback port for the test.
func startAPI(t *testing.T, srv *Server) string {
	t.Helper()
	hs := httptest.NewServer(srv.HTTPHandler())
	t.Cleanup(hs.Close)
	return hs.URL
}

// do sends one HTTP request and returns the status and body.
func do(t *testing.T, method, u, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// getJSON GETs u, wants status want and decodes the body into v.
func getJSON(t *testing.T, u string, want int, v any) {
	t.Helper()
	status, body := do(t, "GET", u, "")
	if status != want {
		t.Fatalf("GET %s: status %d, want %d: %s", u, status, want, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", u, err, body)
	}
}

type listResponse struct {
	Messages []MessageSummary `json:"messages"`
}

const multipartBody = "From: Alice <a@src.test>\r\n" +
	"To: b@dst.test\r\n" +
	"Subject: =?utf-8?q?Caf=C3=A9_report?=\r\n" +
	"MIME-Version: 1.0\r\n" +
	"Content-Type: multipart/mixed; boundary=outer\r\n" +
	"\r\n" +
	"--outer\r\n" +
	"Content-Type: multipart/alternative; boundary=inner\r\n" +
	"\r\n" +
	"--inner\r\n" +
	"Content-Type: text/plain; charset=iso-8859-1\r\n" +
	"Content-Transfer-Encoding: quoted-printable\r\n" +
	"\r\n" +
	"Caf=E9 is open.\r\n" +
	"--inner\r\n" +
	"Content-Type: text/html; charset=utf-8\r\n" +
	"\r\n" +
	"<p>Caf\xc3\xa9 is <b>open</b>.<img src=\"https://tracker.example/x.png\"></p>\r\n" +
	"--inner--\r\n" +
	"--outer\r\n" +
	"Content-Type: application/pdf\r\n" +
	"Content-Disposition: attachment; filename=\"menu.pdf\"\r\n" +
	"Content-Transfer-Encoding: base64\r\n" +
	"\r\n" +
	"JVBERi0xLjQK\r\n" +
	"--outer--\r\n"

func TestHTTPMessages(t *testing.T) {
	srv := NewServer(t)
	base := startAPI(t, srv)
	if err := send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, multipartBody); err != nil {
		t.Fatal(err)
	}
	if err := send(t, srv.Addr(), "c@other.test", []string{"d@dst.test", "e@far.test"}, testBody); err != nil {
		t.Fatal(err)
	}

	var list listResponse
	getJSON(t, base+"/api/v1/messages", 200, &list)
	if len(list.Messages) != 2 || list.Messages[0].ID != "2" || list.Messages[1].ID != "1" {
		t.Fatalf("list = %+v, want messages 2 then 1 (newest first)", list.Messages)
	}
	first := list.Messages[1]
	if first.Subject != "Café report" || first.From != "a@src.test" || first.To[0] != "b@dst.test" ||
		first.Size != int64(len(multipartBody)) || first.TLS || !strings.HasPrefix(first.Client, "127.0.0.1:") || first.Time.IsZero() {
		t.Fatalf("summary = %+v", first)
	}
	for query, want := range map[string]string{
		"to=E@FAR":                              "2",
		"from=a@src":                            "1",
		"subject=café":                          "1",
		"limit=1":                               "2",
		"to=nobody":                             "",
		"since=2000-01-01T00:00:00Z&subject=hi": "2",
	} {
		var got listResponse
		getJSON(t, base+"/api/v1/messages?"+query, 200, &got)
		ids := ""
		for _, m := range got.Messages {
			ids += m.ID
		}
		if ids != want {
			t.Errorf("?%s: got IDs %q, want %q", query, ids, want)
		}
	}
	for _, bad := range []string{"limit=0", "limit=x", "since=yesterday", "after=-1"} {
		if status, _ := do(t, "GET", base+"/api/v1/messages?"+bad, ""); status != 400 {
			t.Errorf("?%s: status %d, want 400", bad, status)
		}
	}
}

func TestHTTPMessageDetailRawAndParts(t *testing.T) {
	srv := NewServer(t)
	base := startAPI(t, srv)
	if err := send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, multipartBody); err != nil {
		t.Fatal(err)
	}
	var d MessageDetail
	getJSON(t, base+"/api/v1/messages/1", 200, &d)
	if d.Text != "Café is open." {
		t.Errorf("text = %q, want the quoted-printable Latin-1 part decoded", d.Text)
	}
	if !strings.Contains(d.HTML, "<b>open</b>") {
		t.Errorf("html = %q", d.HTML)
	}
	if len(d.Attachments) != 1 || d.Attachments[0].Filename != "menu.pdf" || d.Attachments[0].Size != 9 || d.Attachments[0].ContentType != "application/pdf" {
		t.Errorf("attachments = %+v, want menu.pdf of 9 bytes", d.Attachments)
	}
	if len(d.Headers) != 5 || d.Headers[2].Name != "Subject" || d.Headers[2].Value != "Café report" || d.ParseError != "" || d.Helo != "client.test" {
		t.Errorf("headers = %+v, parse error %q, helo %q", d.Headers, d.ParseError, d.Helo)
	}

	resp, err := http.Get(base + "/api/v1/messages/1/raw")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(raw) != multipartBody || resp.Header.Get("Content-Type") != "message/rfc822" {
		t.Errorf("raw: %q as %q, want the bytes as received as message/rfc822", raw, resp.Header.Get("Content-Type"))
	}

	resp, err = http.Get(base + "/api/v1/messages/1/html")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "sandbox") || strings.Contains(csp, "https:") {
		t.Errorf("HTML part served with CSP %q, want no scripts or remote content", csp)
	}

	status, body := do(t, "GET", base+"/api/v1/messages/1/attachments/0", "")
	if status != 200 || body != "%PDF-1.4\n" {
		t.Errorf("attachment 0: %d %q", status, body)
	}
	for _, path := range []string{"/api/v1/messages/1/attachments/1", "/api/v1/messages/99", "/api/v1/messages/99/raw"} {
		if status, _ := do(t, "GET", base+path, ""); status != 404 {
			t.Errorf("GET %s: status %d, want 404", path, status)
		}
	}
}

func TestHTTPWaitBlocksUntilAMatchArrives(t *testing.T) {
	srv := NewServer(t)
	blocked := make(chan struct{}, 1)
	notify := func() {
		select {
		case blocked <- struct{}{}:
		default: // every recorded event wakes the waiter; one signal is enough
		}
	}
	hs := httptest.NewServer((&api{s: srv, blocked: notify}).routes())
	defer hs.Close()
	if err := send(t, srv.Addr(), "a@src.test", []string{"old@dst.test"}, testBody); err != nil {
		t.Fatal(err)
	}

	type result struct {
		status int
		body   string
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Get(hs.URL + "/api/v1/messages/wait?to=new@dst.test&timeout=30s")
		if err != nil {
			done <- result{0, err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- result{resp.StatusCode, string(b)}
	}()
	select {
	case <-blocked:
	case r := <-done:
		t.Fatalf("wait answered before a matching message existed: %d %s", r.status, r.body)
	case <-time.After(waitTimeout):
		t.Fatal("wait request never started blocking")
	}
	// A message that does not match wakes the waiter, which blocks again.
	if err := send(t, srv.Addr(), "a@src.test", []string{"other@dst.test"}, testBody); err != nil {
		t.Fatal(err)
	}
	if err := send(t, srv.Addr(), "a@src.test", []string{"new@dst.test"}, "Subject: the one\r\n\r\nbody\r\n"); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(waitTimeout):
		t.Fatal("wait did not answer after the matching message arrived")
	}
	var d MessageDetail
	if err := json.Unmarshal([]byte(r.body), &d); err != nil || r.status != 200 {
		t.Fatalf("wait: %d %s (%v)", r.status, r.body, err)
	}
	if d.ID != "3" || d.Subject != "the one" || d.Text != "body\r\n" {
		t.Fatalf("wait returned %+v, want message 3", d)
	}

	// after= skips what a test has already seen; an existing match answers at once.
	getJSON(t, hs.URL+"/api/v1/messages/wait?to=dst.test&after=1&timeout=1s", 200, &d)
	if d.ID != "2" {
		t.Fatalf("wait after=1 returned message %s, want 2", d.ID)
	}
}

func TestHTTPWaitTimesOut(t *testing.T) {
	srv := NewServer(t)
	base := startAPI(t, srv)
	status, body := do(t, "GET", base+"/api/v1/messages/wait?subject=never&timeout=20ms", "")
	if status != http.StatusRequestTimeout || !strings.Contains(body, "no matching message within 20ms") {
		t.Fatalf("wait: %d %s, want 408 naming the timeout", status, body)
	}
	for _, bad := range []string{"timeout=soon", "timeout=-1s", "timeout=1h", "after=x"} {
		if status, _ := do(t, "GET", base+"/api/v1/messages/wait?"+bad, ""); status != 400 {
			t.Errorf("wait?%s: status %d, want 400", bad, status)
		}
	}
}

func TestHTTPResetForgetsMessagesAttemptsAndGreylisting(t *testing.T) {
	clk := newFakeClock()
	srv := NewServer(t, Greylist(time.Minute), WithClock(clk.Now))
	base := startAPI(t, srv)
	rcptCode := func() int {
		t.Helper()
		c := dial(t, srv.Addr())
		if err := c.Mail("a@src.test", nil); err != nil {
			t.Fatal(err)
		}
		return replyCode(c.Rcpt("b@dst.test", nil))
	}
	if got := rcptCode(); got != 451 {
		t.Fatalf("first try: %d, want 451", got)
	}
	clk.Advance(2 * time.Minute)
	if err := send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, testBody); err != nil {
		t.Fatalf("retry after the greylist delay: %v", err)
	}

	if status, body := do(t, "DELETE", base+"/api/v1/messages", ""); status != http.StatusOK || !strings.Contains(body, `"deleted": 1`) {
		t.Fatalf("DELETE: status %d %s", status, body)
	}
	var list listResponse
	getJSON(t, base+"/api/v1/messages", 200, &list)
	var att struct{ Attempts []AttemptRecord }
	getJSON(t, base+"/api/v1/attempts", 200, &att)
	if len(list.Messages) != 0 || len(att.Attempts) != 0 {
		t.Fatalf("after reset: %d messages, %d attempts, want none", len(list.Messages), len(att.Attempts))
	}
	if got := rcptCode(); got != 451 {
		t.Fatalf("same triplet after reset: %d, want 451 (greylisting forgotten)", got)
	}
	clk.Advance(2 * time.Minute)
	if err := send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, testBody); err != nil {
		t.Fatal(err)
	}
	getJSON(t, base+"/api/v1/messages", 200, &list)
	if len(list.Messages) != 1 || list.Messages[0].ID != "2" {
		t.Fatalf("after reset: %+v, want one message with the new ID 2", list.Messages)
	}
}

func TestHTTPAttemptsNameWhatAnswered(t *testing.T) {
	clk := newFakeClock()
	srv := NewServer(t, Greylist(time.Minute), WithClock(clk.Now),
		Reply("rcpt:nobody@=550 5.1.1 No such user"),
		RateLimit("mail:*@bulk.test=1/h=451 4.7.28 Slow down"))
	base := startAPI(t, srv)
	c := dial(t, srv.Addr())
	c.Hello("client.test")
	c.Mail("a@src.test", nil)
	c.Rcpt("nobody@dst.test", nil)
	c.Rcpt("b@dst.test", nil)
	c.Reset()
	c.Mail("x@bulk.test", nil)
	c.Reset()
	c.Mail("y@bulk.test", nil)

	var att struct{ Attempts []AttemptRecord }
	getJSON(t, base+"/api/v1/attempts?client=127.0.0.1", 200, &att)
	var got []string
	for _, a := range att.Attempts {
		got = append(got, a.Command+" | "+a.Reply+" | "+string(a.By))
	}
	want := []string{
		"(connect) | 220 fakemx.localhost ESMTP Service Ready | ",
		"EHLO client.test | 250 fakemx.localhost Hello client.test | ",
		"MAIL FROM:<a@src.test> | 250 2.0.0 Roger, accepting mail from <a@src.test> | ",
		"RCPT TO:<nobody@dst.test> | 550 5.1.1 No such user | rule",
		"RCPT TO:<b@dst.test> | 451 4.7.1 Greylisted, try again in 60 seconds | greylist",
		"MAIL FROM:<x@bulk.test> | 250 2.0.0 Roger, accepting mail from <x@bulk.test> | ",
		"MAIL FROM:<y@bulk.test> | 451 4.7.28 Slow down | rate-limit",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("attempts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	getJSON(t, base+"/api/v1/attempts?rcpt="+url.QueryEscape("B@dst.test"), 200, &att)
	if len(att.Attempts) != 1 || att.Attempts[0].From != "a@src.test" || att.Attempts[0].Stage != StageRcpt {
		t.Fatalf("attempts for b@dst.test = %+v", att.Attempts)
	}
	getJSON(t, base+"/api/v1/attempts?client=10.0.0.1", 200, &att)
	if len(att.Attempts) != 0 {
		t.Fatalf("attempts for another client = %+v", att.Attempts)
	}
}

// replyCode returns the SMTP code of err, 250 for nil, 0 for other errors.
func replyCode(err error) int {
	var se *smtp.SMTPError
	switch {
	case err == nil:
		return 250
	case errors.As(err, &se):
		return se.Code
	}
	return 0
}

// FuzzParseMIME checks that no message a client can send makes the API's
// MIME parsing panic, and that a message read in full keeps its attachments
// downloadable by index.
func FuzzParseMIME(f *testing.F) {
	f.Add([]byte(multipartBody))
	f.Add([]byte(testBody))
	f.Add([]byte("Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!\r\n--x--\r\n"))
	f.Add([]byte("Subject: =?unknown?q?x?=\r\nContent-Type: text/plain; charset=klingon\r\n\r\nhi"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseMIME(data)
		subjectOf(data)
		if err != nil {
			return
		}
		for _, a := range p.Attachments {
			got, body, err := attachmentOf(data, a.Index)
			if err != nil || int64(len(body)) != a.Size || got.Filename != a.Filename {
				t.Fatalf("attachment %d listed as %+v, fetched as %+v (%d bytes, %v)", a.Index, a, got, len(body), err)
			}
		}
	})
}
