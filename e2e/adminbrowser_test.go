package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/smtptest"
)

// queuedRelay starts the built relay in the default admin configuration
// (admin.token empty) with its next hop down for an hour, queues n
// messages and returns a client for its admin API and that API's address.
func queuedRelay(t *testing.T, n int) (*admin.Client, string) {
	t.Helper()
	r := startRelay(t, smtptest.DownAddr(t), withRetry(heldRetries), withAdminAPI())
	fillQueue(t, r, "xsite", n)
	return r.admin, strings.TrimPrefix(r.adminURL, "http://")
}

// adminState is what an attack would change, read the way the CLI reads
// it: every queued message's ID and hold, the suppression list, the drain.
func adminState(t *testing.T, c *admin.Client) (ids []string, state string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := c.List(ctx, admin.ListQuery{Limit: 1000})
	if err != nil {
		t.Fatalf("list the queue: %v", err)
	}
	var lines []string
	for _, m := range p.Messages {
		ids = append(ids, m.ID)
		lines = append(lines, fmt.Sprintf("%s held=%v rcpts=%d", m.ID, m.Held, len(m.Recipients)))
	}
	slices.Sort(lines)
	sup, err := c.Suppressions(ctx)
	if err != nil {
		t.Fatalf("list suppressions: %v", err)
	}
	d, err := c.DrainProgress(ctx)
	if err != nil {
		t.Fatalf("drain progress: %v", err)
	}
	lines = append(lines, fmt.Sprintf("suppressions=%d drain=%s", len(sup), d.State))
	return ids, strings.Join(lines, "\n")
}

// TestAdminRefusesCrossSiteRequests: the cross-site and foreign-Host requests, against
// the built binary in its default admin configuration: what a web page can
// make the operator's browser send (a text/plain or body-less POST, a
// DELETE with another site's Origin), and a read for a rebound DNS name,
// are refused with 415 or 403, and the queue, the suppression list and the
// drain state are exactly as before; the CLI's own requests still work.
func TestAdminRefusesCrossSiteRequests(t *testing.T) {
	c, addr := queuedRelay(t, 3)
	ids, before := adminState(t, c)
	if len(ids) != 3 {
		t.Fatalf("queued %d messages, want 3:\n%s", len(ids), before)
	}
	_, port, _ := net.SplitHostPort(addr)
	const evil = "http://evil.example"
	attacks := []struct {
		name, method, path, ct, origin, site, host, body string
		want                                             int
	}{
		{name: "cross-origin text/plain delete", method: "DELETE", path: "/api/v1/queue/" + ids[0], ct: "text/plain", origin: evil, want: 403},
		{name: "cross-origin text/plain bulk delete", method: "POST", path: "/api/v1/queue/bulk", ct: "text/plain;charset=UTF-8", origin: evil, site: "cross-site", body: `{"action":"delete","all":true}`, want: 403},
		{name: "text/plain bulk delete without Origin", method: "POST", path: "/api/v1/queue/bulk", ct: "text/plain", body: `{"action":"delete","all":true}`, want: 415},
		{name: "text/plain drain to another server", method: "POST", path: "/api/v1/queue/drain", ct: "text/plain", body: `{"to":"192.0.2.1:25"}`, want: 415},
		{name: "form suppression", method: "POST", path: "/api/v1/suppressions", ct: "application/x-www-form-urlencoded", body: `{"address":"victim@example.net"}`, want: 415},
		{name: "body-less hold", method: "POST", path: "/api/v1/queue/" + ids[1] + "/hold", want: 415},
		{name: "body-less delete", method: "DELETE", path: "/api/v1/queue/" + ids[2], want: 415},
		{name: "json delete from another origin", method: "DELETE", path: "/api/v1/queue/" + ids[0], ct: "application/json", origin: evil, want: 403},
		{name: "rebound DNS name reads the queue", method: "GET", path: "/api/v1/queue", host: "evil.example:" + port, want: 403},
		{name: "rebound DNS name reads a message", method: "GET", path: "/api/v1/queue/" + ids[0] + "/raw", host: "evil.example:" + port, want: 403},
		{name: "rebound DNS name deletes", method: "POST", path: "/api/v1/queue/bulk", ct: "application/json", origin: "http://evil.example:" + port, site: "same-origin", host: "evil.example:" + port, body: `{"action":"delete","all":true}`, want: 403},
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, a := range attacks {
		req, err := http.NewRequest(a.method, "http://"+addr+a.path, strings.NewReader(a.body))
		if err != nil {
			t.Fatal(err)
		}
		if a.body == "" {
			req.Body, req.ContentLength = http.NoBody, 0
		}
		for k, v := range map[string]string{"Content-Type": a.ct, "Origin": a.origin, "Sec-Fetch-Site": a.site} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		if a.host != "" {
			req.Host = a.host
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != a.want || !strings.Contains(string(body), `"error"`) {
			t.Errorf("%s: %s %s answered %d, want %d with a JSON error: %s", a.name, a.method, a.path, resp.StatusCode, a.want, body)
		}
		for _, id := range ids {
			if !strings.Contains(a.path, id) && strings.Contains(string(body), id) {
				t.Errorf("%s: the answer shows message %s: %s", a.name, id, body)
			}
		}
	}
	if _, after := adminState(t, c); after != before {
		t.Fatalf("refused requests changed the relay:\nbefore\n%s\nafter\n%s", before, after)
	}

	// The CLI's body-less POST and DELETE are labelled JSON and still work.
	url := "http://" + addr
	if out, code := runRelayq(t, nil, "queue", "hold", ids[1], "--admin", url); code != 0 {
		t.Fatalf("relayq queue hold: exit %d: %s", code, out)
	}
	if out, code := runRelayq(t, nil, "queue", "delete", ids[2], "--admin", url); code != 0 {
		t.Fatalf("relayq queue delete: exit %d: %s", code, out)
	}
	left, after := adminState(t, c)
	if !slices.Equal(left, ids[:2]) || !strings.Contains(after, ids[1]+" held=true") {
		t.Fatalf("after the CLI's hold and delete:\n%s", after)
	}
}

// seenRequest is one request the browser sent to the admin API, as the
// recording proxy in front of it saw it.
type seenRequest struct {
	method, path, contentType, site string
	status                          int
}

// TestAdminRefusesAWebPageInABrowser opens, in real Chromium, a page of
// another site that tries what a page can do without the API's consent: a
// no-cors fetch of a text/plain bulk delete, a text/plain form posted to
// flush, and a DELETE (which needs a CORS preflight). The page is served
// from http://localhost:P and the API is reached at http://127.0.0.1:Q, so
// the browser sees two sites. A proxy in front of the API records what
// arrived and the answer; the queue must be exactly as before.
func TestAdminRefusesAWebPageInABrowser(t *testing.T) {
	chrome := findChromium(t)
	c, addr := queuedRelay(t, 2)
	ids, before := adminState(t, c)
	if len(ids) != 2 {
		t.Fatalf("queued %d messages, want 2", len(ids))
	}

	proxy, seen := recordingProxy(t, addr)
	api := proxy.URL // http://127.0.0.1:Q
	page := fmt.Sprintf(`<!doctype html><title>cat pictures</title>
<iframe name="sink"></iframe>
<form id="f" method="POST" enctype="text/plain" target="sink" action="%[1]s/api/v1/queue/flush"><input name='{"x":"' value='"}'></form>
<script>
const api = %[1]q;
window.results = [];
const note = (what) => (r) => window.results.push(what + ":" + (r && r.type ? r.type : String(r)));
Promise.allSettled([
  fetch(api + "/api/v1/queue/bulk", {method: "POST", mode: "no-cors", body: JSON.stringify({action: "delete", all: true})}).then(note("bulk"), note("bulk")),
  fetch(api + "/api/v1/queue/%[2]s", {method: "DELETE"}).then(note("delete"), note("delete")),
]).then(() => { window.fetched = true; });
document.querySelector("iframe").addEventListener("load", () => { window.posted = true; });
document.getElementById("f").submit();
</script>`, api, ids[0])
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	}))
	t.Cleanup(site.Close)
	_, sitePort, _ := net.SplitHostPort(strings.TrimPrefix(site.URL, "http://"))

	ctx := newBrowser(t, chrome)
	must(t, "open the page", chromedp.Do(ctx, chromedp.Navigate("http://localhost:"+sitePort+"/")))
	waitJS(t, ctx, "the page's requests settle", `window.fetched === true && window.posted === true`)

	// What reached the API: the bulk delete and the form post, each refused.
	// The DELETE's preflight (OPTIONS) may arrive; the DELETE itself never
	// may, because no answer grants it.
	got := seen()
	t.Logf("the page's requests as they reached the API: %+v", got)
	checkAllRefused(t, got, ids[0])
	if _, after := adminState(t, c); after != before {
		t.Fatalf("the page changed the relay:\nbefore\n%s\nafter\n%s", before, after)
	}
}

// recordingProxy puts a reverse proxy before the admin API at addr that
// records each request that reached it with the answer; seen returns
// them so far.
func recordingProxy(t *testing.T, addr string) (proxy *httptest.Server, seen func() []seenRequest) {
	t.Helper()
	target, _ := url.Parse("http://" + addr)
	rp := httputil.NewSingleHostReverseProxy(target)
	var (
		mu  sync.Mutex
		got []seenRequest
	)
	rp.ModifyResponse = func(resp *http.Response) error {
		r := resp.Request
		mu.Lock()
		got = append(got, seenRequest{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Sec-Fetch-Site"), resp.StatusCode})
		mu.Unlock()
		return nil
	}
	proxy = httptest.NewServer(rp)
	t.Cleanup(proxy.Close)

	return proxy, func() []seenRequest {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// checkAllRefused checks what reached the API from the page: the bulk
// delete and the form post, each refused. The DELETE's preflight
// (OPTIONS) may arrive; the DELETE of id itself never may, because no
// answer grants it.
func checkAllRefused(t *testing.T, got []seenRequest, id string) {
	t.Helper()
	reached := map[string]seenRequest{}
	for _, s := range got {
		if s.status < 400 {
			t.Errorf("the API answered the page's %s %s (Content-Type %q, Sec-Fetch-Site %q) with %d", s.method, s.path, s.contentType, s.site, s.status)
		}
		reached[s.method+" "+s.path] = s
	}
	for _, want := range []string{"POST /api/v1/queue/bulk", "POST /api/v1/queue/flush"} {
		s, ok := reached[want]
		if !ok {
			t.Errorf("the page's %s never reached the API (saw %v): the test proves nothing", want, got)
			continue
		}
		if s.status != http.StatusForbidden && s.status != http.StatusUnsupportedMediaType {
			t.Errorf("%s: %d, want 403 or 415", want, s.status)
		}
	}
	if _, ok := reached["DELETE /api/v1/queue/"+id]; ok {
		t.Errorf("the browser sent the DELETE: a preflight was granted (saw %v)", got)
	}
}
