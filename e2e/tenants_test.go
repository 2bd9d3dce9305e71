package e2e

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
	"github.com/relayq/relayq/smtptest"
)

// tenantSecret is the password of every SMTP user and the secret of every
// API key of the tenant tests.
const tenantSecret = "s3cret-of-the-tests"

// tenantCredentials is a submission section's users and api_keys: an SMTP
// user NAME-smtp and an API key NAME per name, on tenantSecret.
func tenantCredentials(t *testing.T, names ...string) string {
	t.Helper()
	var users, keys strings.Builder
	for _, n := range names {
		uh, err := bcrypt.GenerateFromPassword([]byte(tenantSecret), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		kh, err := bcrypt.GenerateFromPassword([]byte(n+"."+tenantSecret), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&users, "    - {username: %s-smtp, password_hash: %q}\n", n, uh)
		fmt.Fprintf(&keys, "    - {name: %s, key_hash: %q}\n", n, kh)
	}
	return "  allow_insecure_auth: true\n  users:\n" + users.String() + "  api_keys:\n" + keys.String()
}

// sendAuth submits body over SMTP as user; the DATA outcome and reply.
func sendAuth(t *testing.T, addr, user, from, to, body string) (outcome, string) {
	t.Helper()
	c := mustDial(t, addr)
	plain := base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + tenantSecret))
	c.steps(t, "AUTH as "+user+": ", step{"AUTH PLAIN " + plain, 235})
	o, line, err := c.send(from, to, body, nil)
	if err != nil {
		t.Fatalf("send as %s: %v", user, err)
	}
	return o, line
}

// postAs posts a raw message to the HTTP API with API key name; the status
// and body of the answer.
func postAs(t *testing.T, url, name, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "message/rfc822")
	req.Header.Set("Authorization", "Bearer "+name+"."+tenantSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// tenantMessage is testMessage from the given From: address.
func tenantMessage(from, tok string) string {
	return strings.Replace(testMessage(tok), "From: app@example.org", "From: "+from, 1)
}

// Two tenants on one relay share the From domain example.com (both say
// shared_domains) and each has its own DKIM key for it: each tenant's
// mail, over SMTP AUTH and over the HTTP API, carries its own signature and
// no other (dkimpy and go-msgauth verify), and a From: domain of the other
// tenant is refused with 550 5.7.1 over SMTP and 403 naming the domain
// over HTTP.
func TestTenantsSendAsOwnDomainsSignedWithOwnKeys(t *testing.T) {
	mx := smtptest.NewServer(t)
	dir := t.TempDir()
	recs := dkimtest.Records{}
	bk := keygen(t, dir, "example.com", "billing1", "ed25519", recs)
	sk := keygen(t, dir, "example.com", "shop1", "ed25519", recs)
	bk2 := keygen(t, dir, "billing.example.org", "b2", "ed25519", recs)
	yaml := dkimSection("example.com", "billing1", bk, "example.com", "shop1", sk, "billing.example.org", "b2", bk2) + `tenants:
  - name: billing
    api_keys: [billing]
    users: [billing-smtp]
    domains: [billing.example.org, example.com]
    shared_domains: true
    dkim_keys: ["example.com:billing1", "billing.example.org:b2"]
  - name: shop
    api_keys: [shop]
    users: [shop-smtp]
    domains: [shop.example.net, example.com]
    shared_domains: true
    dkim_keys: ["example.com:shop1"]
`
	r := newRelay(t, mx.Addr(), "", yaml)
	rewriteConfig(t, r, map[string]string{"submission:\n": "submission:\n" + tenantCredentials(t, "billing", "shop")})
	r.httpURL = r.withHTTP(t)
	r.mustStart(t)
	waitDial(t, strings.TrimSuffix(strings.TrimPrefix(r.httpURL, "http://"), "/api/v1/messages"))

	if o, line := sendAuth(t, r.addr, "billing-smtp", "app@example.com", "rcpt@example.net", tenantMessage("app@example.com", "tok-billing-smtp")); o != accepted {
		t.Fatalf("billing over SMTP: %v %s", o, line)
	}
	if resp, body := postAs(t, r.httpURL, "shop", tenantMessage("app@example.com", "tok-shop-http")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("shop over HTTP: %d %s", resp.StatusCode, body)
	}
	if resp, body := postAs(t, r.httpURL, "billing", tenantMessage("bills@billing.example.org", "tok-billing-http")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("billing over HTTP: %d %s", resp.StatusCode, body)
	}
	for tok, want := range map[string][]string{
		"tok-billing-smtp": {"d=example.com s=billing1"},
		"tok-shop-http":    {"d=example.com s=shop1"},
		"tok-billing-http": {"d=billing.example.org s=b2"},
	} {
		if sigs := dkimtest.Verify(t, waitToken(t, mx, tok), recs); !slices.Equal(sigs, want) {
			t.Errorf("%s: signatures %q, want %q only", tok, sigs, want)
		}
	}

	o, line := sendAuth(t, r.addr, "shop-smtp", "app@shop.example.net", "rcpt@example.net", tenantMessage("app@billing.example.org", "tok-shop-as-billing"))
	if o != refused || !strings.HasPrefix(line, "550 5.7.1 ") || !strings.Contains(line, "billing.example.org") {
		t.Errorf("shop as billing's domain over SMTP: %v %q, want 550 5.7.1 naming the domain", o, line)
	}
	resp, body := postAs(t, r.httpURL, "billing", tenantMessage("app@shop.example.net", "tok-billing-as-shop"))
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "shop.example.net") {
		t.Errorf("billing as shop's domain over HTTP: %d %s, want 403 naming the domain", resp.StatusCode, body)
	}
}
