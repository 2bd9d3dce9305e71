package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
	"github.com/relayq/relayq/smtptest"
)

// keygen runs `relayq dkim keygen` and adds the record it printed to recs.
func keygen(t *testing.T, dir, domain, selector, typ string, recs dkimtest.Records) string {
	t.Helper()
	key := filepath.Join(dir, domain+"."+selector+".pem")
	out, err := exec.Command(relayqBin, "dkim", "keygen", "--domain", domain, "--selector", selector, "--type", typ, "--out", key).CombinedOutput()
	if err != nil {
		t.Fatalf("dkim keygen: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if name, value, ok := dkimtest.ParseZoneLine(line); ok {
			recs[name] = value
			return key
		}
	}
	t.Fatalf("dkim keygen printed no record:\n%s", out)
	return ""
}

func dkimSection(keys ...string) string {
	s := "dkim:\n  keys:\n"
	for i := 0; i < len(keys); i += 3 {
		s += fmt.Sprintf("    - {domain: %s, selector: %s, private_key_file: %q}\n", keys[i], keys[i+1], keys[i+2])
	}
	return s
}

// The keys `dkim keygen` made sign mail at acceptance: what the next hop
// receives, after relayq's dot-stuffing, verifies with go-msgauth and with
// dkimpy against the records keygen printed (RSA and Ed25519 side by side);
// bounces carry the hostname domain's signature; a SIGHUP after a rotation
// signs new mail with the new selector only; `dkim check` agrees with DNS.
func TestDKIMSigningRotationAndBounces(t *testing.T) {
	mx := smtptest.NewServer(t, smtptest.Reply("rcpt:nobody@=550 5.1.1 No such user"))
	keyDir := t.TempDir()
	recs := dkimtest.Records{}
	rsa1 := keygen(t, keyDir, "example.org", "rsa1", "rsa", recs)
	ed1 := keygen(t, keyDir, "example.org", "ed1", "ed25519", recs)
	ed2 := keygen(t, keyDir, "example.org", "ed2", "ed25519", recs)
	host := keygen(t, keyDir, "relay.test", "b1", "ed25519", recs)
	dns := dkimtest.ServeDNS(t, recs)

	keys := []string{"example.org", "rsa1", rsa1, "example.org", "ed1", ed1, "relay.test", "b1", host}
	r := newRelay(t, mx.Addr(), "", dkimSection(keys...))
	// Routes decide where mail goes; the DNS server is for `dkim check`.
	cfg, err := os.ReadFile(r.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg = bytes.Replace(cfg, []byte("delivery:\n"), []byte(fmt.Sprintf("delivery:\n  dns_server: %q\n", dns.Addr)), 1)
	if err := os.WriteFile(r.cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}

	check, err := exec.Command(relayqBin, "dkim", "check", "--config", r.cfgPath).CombinedOutput()
	if err != nil || strings.Count(string(check), ": ok") != 3 {
		t.Fatalf("dkim check: %v\n%s", err, check)
	}
	r.mustStart(t)

	r.submitToken(t, "tok-signed")
	got := waitToken(t, mx, "tok-signed")
	if sigs := dkimtest.Verify(t, got, recs); !slices.Equal(sigs, []string{"d=example.org s=rsa1", "d=example.org s=ed1"}) {
		t.Fatalf("signatures %q, want rsa1 and ed1", sigs)
	}

	sendAccepted(t, r.addr, "app@example.org", "nobody@example.net", testMessage("tok-bounced"), "submission")
	bounce := waitMessage(t, mx, 10*time.Second, func(m smtptest.Message) bool { return m.From == "" })
	if sigs := dkimtest.Verify(t, bounce, recs); !slices.Equal(sigs, []string{"d=relay.test s=b1"}) {
		t.Fatalf("bounce signatures %q, want relay.test's b1", sigs)
	}

	// Rotation: ed2 replaces rsa1 and ed1.
	cfg = bytes.Replace(cfg, []byte(dkimSection(keys...)), []byte(dkimSection("example.org", "ed2", ed2)), 1)
	r.reload(t, cfg, "configuration reloaded")
	r.submitToken(t, "tok-rotated")
	if sigs := dkimtest.Verify(t, waitToken(t, mx, "tok-rotated"), recs); !slices.Equal(sigs, []string{"d=example.org s=ed2"}) {
		t.Fatalf("after rotation: signatures %q, want ed2 only", sigs)
	}
}

// waitToken waits for the message carrying tok at mx and returns its bytes.
func waitToken(t *testing.T, mx *smtptest.Server, tok string) []byte {
	t.Helper()
	return waitMessage(t, mx, 10*time.Second, func(m smtptest.Message) bool { return m.From != "" && tokenOf(m.Data) == tok })
}

// A message is signed once, at acceptance: queued while its next hop is
// down, then delivered by a restarted relay, it carries one signature, the
// one it was accepted with.
func TestDKIMSignedOnceAcrossRestart(t *testing.T) {
	recs := dkimtest.Records{}
	key := keygen(t, t.TempDir(), "example.org", "ed1", "ed25519", recs)
	down := smtptest.DownAddr(t) // nothing listens here
	r := startRelay(t, down, withYAML(dkimSection("example.org", "ed1", key)))
	r.submitToken(t, "tok-restart")
	r.kill()

	mx := smtptest.NewServer(t)
	cfg, err := os.ReadFile(r.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.cfgPath, bytes.Replace(cfg, []byte(down), []byte(mx.Addr()), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	r.mustStart(t)
	if sigs := dkimtest.Verify(t, waitToken(t, mx, "tok-restart"), recs); !slices.Equal(sigs, []string{"d=example.org s=ed1"}) {
		t.Fatalf("after a restart: signatures %q, want the one from acceptance", sigs)
	}
}
