package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/smtptest"
)

const (
	tlsWriteToken = "tls-write-secret"
	tlsReadToken  = "tls-read-secret"
)

// tlsRelay is the built relay with admin.tls on a certificate made for
// this test, one message queued behind a next hop that is down.
type tlsRelay struct {
	r    *relay
	addr string // the admin listener, host:port
	base string // https://addr
	hc   *http.Client
	id   string // the queued message
}

// newTLSRelay writes a fresh self-signed certificate (crypto/x509, in
// t.TempDir()) and starts the relay with it as admin.tls, with both
// tokens.
func newTLSRelay(t *testing.T) *tlsRelay {
	t.Helper()
	cert, err := smtptest.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "admin.pem"), filepath.Join(dir, "admin-key.pem")
	for f, b := range map[string][]byte{certFile: cert.CertPEM, keyFile: cert.KeyPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := newRelay(t, smtptest.DownAddr(t), "retry:\n  initial_delay: 1h\n  max_delay: 1h\n  jitter: 1m\n", "")
	_, plain := r.withAdmin(t)
	b, err := os.ReadFile(r.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("admin:\n"), fmt.Appendf(nil, "admin:\n  token: %q\n  read_token: %q\n  tls:\n    cert_file: %q\n    key_file: %q\n",
		tlsWriteToken, tlsReadToken, certFile, keyFile), 1)
	r.startWith(t, b)
	addr := strings.TrimPrefix(plain, "http://")
	waitDial(t, addr)
	ids := fillQueue(t, r, "admintls", 1)
	tr := &tlsRelay{r: r, addr: addr, base: "https://" + addr,
		hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cert.Pool}},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	c := &admin.Client{BaseURL: tr.base, Token: tlsWriteToken, HTTP: tr.hc}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := c.List(ctx, admin.ListQuery{})
	if err != nil || len(p.Messages) != 1 {
		t.Fatalf("list over TLS with the token: %+v %v (queued %v)", p, err, ids)
	}
	tr.id = p.Messages[0].ID
	return tr
}

// do sends one request to the TLS admin listener and returns the status,
// the body and the response.
func (tr *tlsRelay) do(t *testing.T, method, path, token, origin, contentType string, body io.Reader, cookies ...*http.Cookie) (int, string, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(method, tr.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Origin": origin, "Content-Type": contentType} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := tr.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// login logs in to the console with token as a browser does (the login
// form's cookie and CSRF token, the listener's own Origin) and returns
// the session cookie it set.
func (tr *tlsRelay) login(t *testing.T, token string) *http.Cookie {
	t.Helper()
	code, page, resp := tr.do(t, "GET", "/ui/login", "", "", "", nil)
	m := csrfInput.FindStringSubmatch(page)
	if code != http.StatusOK || m == nil || len(resp.Cookies()) != 1 {
		t.Fatalf("GET /ui/login over TLS: %d, cookies %v\n%s", code, resp.Cookies(), page)
	}
	form := url.Values{"csrf": {m[1]}, "token": {token}}.Encode()
	code, page, resp = tr.do(t, "POST", "/ui/login", "", tr.base, "application/x-www-form-urlencoded", strings.NewReader(form), resp.Cookies()[0])
	if code != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("POST /ui/login over TLS: %d, cookies %v\n%s", code, resp.Cookies(), page)
	}
	return resp.Cookies()[0]
}

// TestAdminOverTLS: with admin.tls, the built relay's console logs in over
// HTTPS with a Secure, HttpOnly, SameSite=Strict cookie; the API answers a
// token over TLS (the read token its events, not the raw message) and the
// CLI reading the relay's config; plain HTTP to the port gets no data; a
// POST from another origin is 403.
func TestAdminOverTLS(t *testing.T) {
	tr := newTLSRelay(t)
	ck := tr.login(t, tlsWriteToken)
	if ck.Name != "__Host-relayq_console" || !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" {
		t.Errorf("session cookie over TLS: %+v, want __Host-, Secure, HttpOnly, SameSite=Strict, Path=/", ck)
	}
	if code, page, _ := tr.do(t, "GET", "/ui/message/"+tr.id, "", "", "", nil, ck); code != http.StatusOK || !strings.Contains(page, `id="actions"`) {
		t.Errorf("the message page with the write session over TLS: %d\n%s", code, page)
	}

	code, body, _ := tr.do(t, "GET", "/api/v1/queue/"+tr.id, tlsWriteToken, "", "", nil)
	var m admin.Message
	if code != http.StatusOK || json.Unmarshal([]byte(body), &m) != nil || m.ID != tr.id {
		t.Errorf("GET the message with the token over TLS: %d %s", code, body)
	}

	// The read token reads metadata over TLS, never the raw message.
	if code, body, _ := tr.do(t, "GET", "/api/v1/events", tlsReadToken, "", "", nil); code != http.StatusOK || !strings.Contains(body, tr.id) {
		t.Errorf("GET events with the read token over TLS: %d %s", code, body)
	}
	if code, body, _ := tr.do(t, "GET", "/api/v1/queue/"+tr.id+"/raw", tlsReadToken, "", "", nil); code != http.StatusUnauthorized {
		t.Errorf("GET the raw message with the read token over TLS: %d %s", code, body)
	}

	plain := &http.Client{Timeout: 10 * time.Second}
	if resp, err := plain.Get("http://" + tr.addr + "/api/v1/queue"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || strings.Contains(string(b), tr.id) {
			t.Errorf("plain HTTP to the TLS port answered %d: %s", resp.StatusCode, b)
		}
	}

	for _, origin := range []string{"https://evil.example", "http://" + tr.addr} {
		code, body, _ := tr.do(t, "POST", "/api/v1/queue/"+tr.id+"/hold", tlsWriteToken, origin, "application/json", nil)
		if code != http.StatusForbidden {
			t.Errorf("hold with Origin %s: %d %s, want 403", origin, code, body)
		}
	}
	form := strings.NewReader(url.Values{"token": {tlsWriteToken}}.Encode())
	if code, _, _ := tr.do(t, "POST", "/ui/login", "", "https://evil.example", "application/x-www-form-urlencoded", form, ck); code != http.StatusForbidden {
		t.Errorf("console login posted from another origin: %d, want 403", code)
	}
	if out, code := runRelayq(t, nil, "queue", "show", tr.id, "--config", tr.r.cfgPath); code != 0 || strings.Contains(out, "held") {
		t.Errorf("relayq queue show --config over TLS: exit %d\n%s", code, out)
	}
	if out, code := runRelayq(t, nil, "queue", "hold", tr.id, "--config", tr.r.cfgPath); code != 0 {
		t.Errorf("relayq queue hold --config over TLS: exit %d\n%s", code, out)
	}
	if out, code := runRelayq(t, nil, "queue", "list", "--config", tr.r.cfgPath); code != 0 || !strings.Contains(out, tr.id+"!") {
		t.Errorf("relayq queue list --config over TLS after the hold: exit %d\n%s", code, out)
	}
}
