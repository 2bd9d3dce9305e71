package smtptest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// hostDo sends one request to the API at base with the Host header set to
// host, as a browser does for a page of that name rebound to 127.0.0.1.
func hostDo(t *testing.T, method, base, host, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHTTPRefusesForeignHost: a page of a name the attacker rebinds to
// 127.0.0.1 can neither read captured mail nor rewrite the script: any
// Host but an IP address, localhost or an allowed name gets 403 with a
// JSON error, and the script stays as it was. The allowed name, the IP
// address and localhost are answered.
func TestHTTPRefusesForeignHost(t *testing.T) {
	srv := NewServer(t, HTTPAllowedHosts("fakemx", "mx.ci.test:8026"))
	if err := send(t, srv.Addr(), "a@src.test", []string{"b@dst.test"}, "Subject: reset link\r\n\r\nhttps://app.test/reset?token=secret\r\n"); err != nil {
		t.Fatal(err)
	}
	base := startAPI(t, srv)
	port := base[strings.LastIndex(base, ":")+1:]
	before := srv.Script().String()

	for _, host := range []string{"attacker.example:" + port, "localhost.attacker.example", "mx.ci.test:9999"} {
		code, body := hostDo(t, "GET", base, host, "/api/v1/messages", "")
		var e struct{ Error string }
		if code != http.StatusForbidden || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error, "is not a name of this server") || strings.Contains(body, "reset") {
			t.Fatalf("GET messages for Host %s: %d %s", host, code, body)
		}
		if code, body := hostDo(t, "PUT", base, host, "/api/v1/script", "--reply mail=550 5.7.1 No\n"); code != http.StatusForbidden {
			t.Fatalf("PUT script for Host %s: %d %s", host, code, body)
		}
		if code, _ := hostDo(t, "GET", base, host, "/", ""); code != http.StatusForbidden {
			t.Fatalf("the page for Host %s: %d", host, code)
		}
	}
	if after := srv.Script().String(); after != before {
		t.Fatalf("script changed by refused requests: %q", after)
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "fakemx:" + port, "FAKEMX.", "mx.ci.test:8026"} {
		if code, body := hostDo(t, "GET", base, host, "/api/v1/messages", ""); code != http.StatusOK || !strings.Contains(body, "reset link") {
			t.Fatalf("GET messages for Host %s: %d %s", host, code, body)
		}
	}
}
