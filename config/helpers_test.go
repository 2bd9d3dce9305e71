package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relayq/relayq/smtptest"
)

// clearEnv removes every RELAYQ_ variable for the duration of the test, so
// that the machine running the tests cannot change their outcome.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix+"_") {
			t.Setenv(name, "") // restores the old value after the test
			os.Unsetenv(name)
		}
	}
}

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeKeyPair generates a self-signed certificate and writes it and its
// key as PEM files cert.pem and key.pem in dir.
func writeKeyPair(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM := newKeyPair(t)
	return writeFile(t, dir, "cert.pem", string(certPEM)), writeFile(t, dir, "key.pem", string(keyPEM))
}

func newKeyPair(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	c, err := smtptest.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	return c.CertPEM, c.KeyPEM
}
