package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtptest"
)

// linkRE finds relayq's one-click link in a delivered message.
var linkRE = regexp.MustCompile(`(?m)^List-Unsubscribe: <(https://unsub\.example\.test/u/[A-Za-z0-9_-]+)>\r$`)

// A bulk stream with dkim_alignment: refuse and one_click: add, against
// the built binary: unaligned mail is refused 550 5.7.22; aligned mail
// leaves with relayq's List-Unsubscribe and List-Unsubscribe-Post, under
// a signature dkimpy verifies; a GET of the link and a tampered link
// change nothing; the RFC 8058 POST (as curl -d sends it) suppresses that
// recipient, with one unsubscribed event, and a replay adds none.
func TestOneClickUnsubscribe(t *testing.T) {
	mx := smtptest.NewServer(t)
	dir := t.TempDir()
	recs := dkimtest.Records{}
	key := keygen(t, dir, "example.org", "ed1", "ed25519", recs)
	secret := filepath.Join(dir, "unsub.key")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := freeAddr(t)
	r := startRelay(t, mx.Addr(), withAdminAPI(), withYAML(dkimSection("example.org", "ed1", key)+
		"streams:\n  - name: default\n    preflight: {dkim_alignment: refuse, one_click: add}\n"+
		fmt.Sprintf("unsubscribe:\n  listen: [%q]\n  url: https://unsub.example.test\n  secret_file: %q\n", listen, secret)))
	waitDial(t, listen)

	c := mustDial(t, r.addr)
	unaligned := strings.Replace(testMessage("tok-unaligned"), "From: app@example.org", "From: app@example.net", 1)
	if o, line, _ := c.send("app@example.net", "bob@example.net", unaligned, nil); o != refused || !strings.HasPrefix(line, "550 5.7.22 preflight dkim_alignment") {
		t.Fatalf("unaligned From: %v %q", o, line)
	}

	sendAccepted(t, r.addr, "app@example.org", "bob@example.net", testMessage("tok-bulk"), "bulk message")
	got := waitToken(t, mx, "tok-bulk")
	m := linkRE.FindSubmatch(got)
	if m == nil || !strings.Contains(string(got), "\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n") {
		t.Fatalf("no one-click fields:\n%.2000s", got)
	}
	dkimtest.Verify(t, got, recs) // go-msgauth and dkimpy
	if sig := string(got[:strings.Index(string(got), "\r\nFrom:")]); !strings.Contains(strings.ToLower(strings.Join(strings.Fields(sig), "")), "list-unsubscribe:list-unsubscribe-post") {
		t.Fatalf("the signature does not cover both fields:\n%s", sig)
	}
	link := strings.Replace(string(m[1]), "https://unsub.example.test", "http://"+listen, 1)

	// GET shows the page and unsubscribes nobody.
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "<button") {
		t.Fatalf("GET: %d\n%s", resp.StatusCode, page)
	}
	tok := link[strings.LastIndex(link, "/")+1:]
	tampered := link[:len(link)-len(tok)] + tok[:3] + string(tok[3]^1) + tok[4:]
	if code := curlPost(t, tampered); code != 404 {
		t.Fatalf("tampered link: %d, want 404", code)
	}
	if n := unsubscribedEvents(t, r); n != 0 {
		t.Fatalf("GET and a tampered link: %d unsubscribed events", n)
	}
	sendAccepted(t, r.addr, "app@example.org", "bob@example.net", testMessage("tok-still-subscribed"), "after GET")

	for i := range 2 {
		if code := curlPost(t, link); code != 200 {
			t.Fatalf("POST %d: %d", i, code)
		}
	}
	if n := unsubscribedEvents(t, r); n != 1 {
		t.Fatalf("a POST and its replay: %d unsubscribed events, want 1", n)
	}
	if o, line, _ := mustDial(t, r.addr).send("app@example.org", "bob@example.net", testMessage("tok-after"), nil); o != refused || !strings.HasPrefix(line, "550 5.1.1") {
		t.Fatalf("after the unsubscribe: %v %q, want the RCPT refused", o, line)
	}
	sendAccepted(t, r.addr, "app@example.org", "carol@example.net", testMessage("tok-other"), "another recipient")
}

// curlPost sends RFC 8058's one-click POST to url as `curl -d
// List-Unsubscribe=One-Click` does (curl itself when installed) and
// returns the status.
func curlPost(t *testing.T, url string) int {
	t.Helper()
	if curl, err := exec.LookPath("curl"); err == nil {
		out, err := exec.Command(curl, "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20", "-d", "List-Unsubscribe=One-Click", url).Output()
		if err != nil {
			t.Fatalf("curl: %v", err)
		}
		var code int
		fmt.Sscan(string(out), &code)
		return code
	}
	resp, err := http.Post(url, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func unsubscribedEvents(t *testing.T, r *relay) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := r.admin.Events(ctx, "", []queue.EventType{queue.EventUnsubscribed}, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(p.Events)
}
