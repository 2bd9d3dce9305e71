package dkim

import (
	"path/filepath"
	"testing"

	"github.com/relayq/relayq/internal/testfs"
)

// A key file WriteKeyFile returned from survives a power cut right after
// (its data and its name are synced): the operator publishes the key in
// DNS next, and a key lost after that signs nothing that verifies.
func TestWriteKeyFileSurvivesPowerCut(t *testing.T) {
	c := testfs.Crash(t)
	path := filepath.Join(c.Dir(), "s1.key")
	if err := WriteKeyFile(path, edKey()); err != nil {
		t.Fatal(err)
	}
	c.Cut()
	if err := c.PowerOn(); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(path); err != nil {
		t.Fatalf("the key after a power cut: %v", err)
	}
}
