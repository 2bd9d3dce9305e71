package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/testfs"
	"github.com/relayq/relayq/internal/waitfor"
	"github.com/relayq/relayq/smtptest"
)

// TestDiskReserveKeepsQueuedMailMoving, with the built binary: the queue
// on a 25 MB tmpfs with an 8 MiB reserve, events and history on, and a
// next hop that greylists every message for 10 s, so mail piles up. Once
// the disk is down to its reserve, new mail gets 452 4.3.1 and /readyz
// fails, and every message accepted before is still delivered (its
// claims, outcomes, events and pruning write into the reserve); with the
// mail delivered, intake opens again. Before, intake went on until the
// disk was full, and then the queued mail could not be claimed or
// recorded for minutes while /readyz said ready. Needs root for mount.
func TestDiskReserveKeepsQueuedMailMoving(t *testing.T) {
	dir := testfs.Tmpfs(t, "25m")
	mx := smtptest.NewServer(t, smtptest.DiscardEvents(), smtptest.Greylist(10*time.Second))
	r := newRelay(t, mx.Addr(), "retry:\n  initial_delay: 1s\n  max_delay: 2s\n  jitter: 0s\n", "")
	adminAddr := smtptest.ClosedAddr(t)
	rewriteConfig(t, r, map[string]string{
		"  path: " + fmt.Sprintf("%q", filepath.Join(r.dir, "queue.db")): "  path: " + fmt.Sprintf("%q", filepath.Join(dir, "queue.db")) + "\n  reserve_bytes: 8388608",
		"admin:\n  listen: \"\"": fmt.Sprintf("admin:\n  listen: %q", adminAddr),
	})
	r.mustStart(t)
	c := mustDial(t, r.addr)
	body := "Subject: big\r\n\r\n" + strings.Repeat(strings.Repeat("x", 998)+"\r\n", 20) // 20 kB
	var tokens []string
	var refusal string
	for i := 0; refusal == "" && i < 2000; i++ {
		tok := fmt.Sprintf("tok-reserve-%04d", i)
		o, line, err := c.send("app@example.org", fmt.Sprintf("u%d@example.net", i), body+testMessage(tok), nil)
		switch {
		case o == accepted:
			tokens = append(tokens, tok)
		case o == refused && strings.HasPrefix(line, "452 4.3.1"):
			refusal = line
		default:
			t.Fatalf("message %d: %v %q %v; want 250, or 452 4.3.1 at the reserve", i, o, line, err)
		}
	}
	if refusal == "" {
		t.Fatalf("%d messages accepted and the reserve never refused one", len(tokens))
	}
	t.Logf("%d messages of 20 kB accepted, then %q", len(tokens), refusal)
	if code := readyz(t, adminAddr); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while below the reserve: %d, want 503", code)
	}
	start := time.Now()
	mx.WaitFor(t, 90*time.Second, func() bool { return len(deliveredTokens(mx)) >= len(tokens) })
	t.Logf("all %d delivered %v after the first refusal", len(tokens), time.Since(start).Round(100*time.Millisecond))
	got := deliveredTokens(mx)
	for _, tok := range tokens {
		if got[tok] == 0 {
			t.Errorf("%s was accepted and never delivered", tok)
		}
	}
	// Delivered mail gives its pages back: intake opens again.
	var late outcome = refused
	var line string
	waitfor.Within(10*time.Second, func() bool {
		c, err := dialClient(r.addr)
		if err != nil {
			return false
		}
		defer c.close()
		late, line, _ = c.send("app@example.org", "late@example.net", body+testMessage("tok-reserve-late"), nil)
		return late == accepted
	})
	if late != accepted {
		t.Errorf("intake still closed 10 s after the mail left: %v %q", late, line)
	}
	if code := readyz(t, adminAddr); code != http.StatusOK {
		t.Errorf("/readyz after the mail left: %d, want 200", code)
	}
}

// rewriteConfig replaces, in r's config file, each key of repl with its value.
func rewriteConfig(t *testing.T, r *relay, repl map[string]string) {
	t.Helper()
	cfg, err := os.ReadFile(r.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(cfg)
	for old, new := range repl {
		if !strings.Contains(s, old) {
			t.Fatalf("config has no %q:\n%s", old, s)
		}
		s = strings.Replace(s, old, new, 1)
	}
	if err := os.WriteFile(r.cfgPath, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// readyz asks the admin API's readiness probe and returns its status.
func readyz(t *testing.T, adminAddr string) int {
	t.Helper()
	resp, err := http.Get("http://" + adminAddr + "/readyz")
	if err != nil {
		t.Fatalf("/readyz: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
