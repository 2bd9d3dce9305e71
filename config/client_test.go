package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// LoadSubmitter reads hostname and submission.listen and nothing else: a
// file whose TLS and DKIM key files cannot be opened (root's alone on a
// real install, missing here), with a relative key path and a key this
// version does not know, is still read, and the environment wins over it.
func TestLoadSubmitterOpensNoKeyFile(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	path := writeFile(t, dir, "relayq.yaml", `hostname: mx1.example.org
submission:
  listen: ["0.0.0.0:2525"]
  tls:
    cert_file: /nonexistent/cert.pem
    key_file: /nonexistent/key.pem
dkim:
  keys:
    - domain: example.org
      selector: s1
      private_key_file: keys/s1.pem
future_key: 1
`)
	s, err := LoadSubmitter(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Hostname != "mx1.example.org" || strings.Join(s.Listen, ",") != "0.0.0.0:2525" {
		t.Errorf("got %+v", s)
	}
	if _, err := Load(path); err == nil {
		t.Error("Load accepted the missing key files; this test no longer shows the difference")
	}
	t.Setenv("RELAYQ_HOSTNAME", "env.example.org")
	if s, err := LoadSubmitter(path); err != nil || s.Hostname != "env.example.org" {
		t.Errorf("RELAYQ_HOSTNAME set: %+v, %v", s, err)
	}
}

// The two keys it reads are still checked, named with their file.
func TestLoadSubmitterRefusesItsOwnKeys(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	for _, tc := range []struct{ yaml, want string }{
		{"hostname: \"bad host\"\n", "hostname"},
		{"submission:\n  listen: [\"nohost\"]\n", "submission.listen[0]"},
	} {
		path := writeFile(t, dir, "relayq.yaml", tc.yaml)
		_, err := LoadSubmitter(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one naming %s and %s", tc.yaml, err, path, tc.want)
		}
	}
	if _, err := LoadSubmitter(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing file was accepted")
	}
}
