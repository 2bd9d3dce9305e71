package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// A SIGHUP that changes a key only a restart applies says so, naming the
// key, instead of a bare "configuration reloaded". The start-up line names
// the listeners and where mail goes.
func TestSIGHUPNamesKeysThatNeedARestart(t *testing.T) {
	mx := smtptest.NewServer(t)
	r := startRelay(t, mx.Addr())
	if err := r.log.waitFor("smtp="+r.addr, 5*time.Second); err != nil {
		t.Fatalf("start-up summary: %v", err)
	}
	cfg, err := os.ReadFile(r.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(cfg), "delivery:\n", "delivery:\n  workers: 3\n", 1)
	r.reload(t, []byte(changed), "key=delivery.workers")
	if err := r.log.waitFor("configuration partly reloaded", 5*time.Second); err != nil {
		t.Fatal(err)
	}
}
