package e2e

import (
	"bytes"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

func (r *relay) hup(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	if cmd == nil {
		t.Fatal("relay not running")
	}
	r.log.mark()
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
}

// reload replaces r's config with cfg, sends SIGHUP and waits (5 s at
// most) for the log line want, failing the test without it.
func (r *relay) reload(t *testing.T, cfg []byte, want string) {
	t.Helper()
	if err := os.WriteFile(r.cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	r.hup(t)
	if err := r.log.waitFor(want, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

func (r *relay) submitToken(t *testing.T, tok string) {
	t.Helper()
	sendAccepted(t, r.addr, "app@example.org", "rcpt@example.net", testMessage(tok), "submission of "+tok)
}

// SIGHUP applies a new routing table without a restart; a broken file is
// refused with a log line and the running configuration stays.
func TestSIGHUPReloadsAndRefusesBadConfig(t *testing.T) {
	mx1 := smtptest.NewServer(t)
	mx2 := smtptest.NewServer(t)
	r := startRelay(t, mx1.Addr())
	r.submitToken(t, "tok-before")
	mx1.WaitFor(t, 10*time.Second, func() bool { return deliveredTokens(mx1)["tok-before"] == 1 })

	good, err := os.ReadFile(r.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	rerouted := bytes.ReplaceAll(good, []byte(mx1.Addr()), []byte(mx2.Addr()))
	r.reload(t, rerouted, "configuration reloaded")
	r.submitToken(t, "tok-after-reload")
	mx2.WaitFor(t, 10*time.Second, func() bool { return deliveredTokens(mx2)["tok-after-reload"] == 1 })

	r.reload(t, append(rerouted, []byte("retry:\n  initial_delay: soon\n")...), "reload refused")
	// Still running, still on the last good configuration.
	r.submitToken(t, "tok-after-bad-reload")
	mx2.WaitFor(t, 10*time.Second, func() bool { return deliveredTokens(mx2)["tok-after-bad-reload"] == 1 })
	if n := deliveredTokens(mx1)["tok-after-reload"] + deliveredTokens(mx1)["tok-after-bad-reload"]; n != 0 {
		t.Fatalf("%d messages went to the old route after the reload", n)
	}
}
