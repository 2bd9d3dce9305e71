package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
)

// keygen runs `relayq dkim keygen` and returns the record it printed.
func keygen(t *testing.T, dir, selector, typ string) (keyFile, name, value string) {
	t.Helper()
	keyFile = filepath.Join(dir, selector+".pem")
	var out bytes.Buffer
	if err := dkimCmd([]string{"keygen", "--domain", "example.org", "--selector", selector, "--type", typ, "--out", keyFile}, &out); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if n, v, ok := dkimtest.ParseZoneLine(line); ok {
			return keyFile, n, v
		}
	}
	t.Fatalf("keygen printed no record:\n%s", out.String())
	return
}

// `dkim check` asks the configured DNS server for each selector and says
// which records publish their key.
func TestDKIMCheck(t *testing.T) {
	dir := t.TempDir()
	rsaFile, rsaName, rsaRec := keygen(t, dir, "rsa1", "rsa")
	edFile, edName, edRec := keygen(t, dir, "ed1", "ed25519")
	_, _, otherRec := keygen(t, dir, "other", "ed25519")
	dns := dkimtest.ServeDNS(t, dkimtest.Records{rsaName: rsaRec, edName: edRec})
	cfg := func(keys ...string) string {
		body := fmt.Sprintf("submission:\n  listen: [\"127.0.0.1:0\"]\nqueue:\n  path: %q\ndelivery:\n  dns_server: %q\ndkim:\n  keys:\n",
			filepath.Join(dir, "q.db"), dns.Addr)
		for i := 0; i < len(keys); i += 2 {
			body += fmt.Sprintf("    - {domain: example.org, selector: %s, private_key_file: %q}\n", keys[i], keys[i+1])
		}
		p := filepath.Join(dir, "relayq.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	var out bytes.Buffer
	if err := dkimCmd([]string{"check", "--config", cfg("rsa1", rsaFile, "ed1", edFile)}, &out); err != nil {
		t.Fatalf("check: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "rsa1._domainkey.example.org.: ok") || !strings.Contains(out.String(), "ed1._domainkey.example.org.: ok") {
		t.Fatalf("check output:\n%s", out.String())
	}

	// A record that publishes another key, and a selector never published.
	dns.Set(edName, otherRec)
	out.Reset()
	err := dkimCmd([]string{"check", "--config", cfg("ed1", edFile, "other", filepath.Join(dir, "other.pem"))}, &out)
	if err == nil || !strings.Contains(out.String(), "ed1._domainkey.example.org.: FAIL") ||
		!strings.Contains(out.String(), "other._domainkey.example.org.: FAIL") {
		t.Fatalf("check of wrong and missing records: %v\n%s", err, out.String())
	}
}

// check-config refuses a configuration whose key file is missing, naming it.
func TestCheckConfigRefusesMissingKeyFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "gone.pem")
	p := filepath.Join(dir, "relayq.yaml")
	os.WriteFile(p, []byte(fmt.Sprintf("dkim:\n  keys:\n    - {domain: example.org, selector: s, private_key_file: %q}\n", missing)), 0o600)
	err := checkConfig([]string{"--config", p}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "dkim.keys[0].private_key_file") {
		t.Fatalf("check-config: %v, want an error naming %s", err, missing)
	}
}
