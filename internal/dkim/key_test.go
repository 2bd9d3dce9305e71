package dkim

import (
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type equaler interface{ Equal(crypto.PublicKey) bool }

func writePEM(t *testing.T, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Keys load from PKCS#1 and PKCS#8; anything else is refused with the file named.
func TestLoadKey(t *testing.T) {
	rsaPKCS8, _ := x509.MarshalPKCS8PrivateKey(rsaKey())
	edPKCS8, _ := x509.MarshalPKCS8PrivateKey(edKey())
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	os.WriteFile(garbage, []byte("not a key"), 0o600)
	tests := []struct {
		name, path, wantErr string
	}{
		{"RSA PKCS#1", writePEM(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey().(*rsa.PrivateKey))), ""},
		{"RSA PKCS#8", writePEM(t, "PRIVATE KEY", rsaPKCS8), ""},
		{"Ed25519 PKCS#8", writePEM(t, "PRIVATE KEY", edPKCS8), ""},
		{"missing", filepath.Join(dir, "missing.pem"), "no such file"},
		{"not PEM", garbage, "no PEM block"},
		{"a certificate", writePEM(t, "CERTIFICATE", []byte{1}), `"CERTIFICATE" is not a private key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := LoadKey(tt.path)
			if tt.wantErr == "" {
				if err != nil || k == nil {
					t.Fatalf("LoadKey: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.path) {
				t.Fatalf("error %v, want one naming %s and saying %q", err, tt.path, tt.wantErr)
			}
		})
	}
}

// Generated keys are written 0600, never over an existing file, and load back.
func TestWriteKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.pem")
	if err := WriteKeyFile(path, edKey()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	back, err := LoadKey(path)
	if err != nil || !edKey().Public().(equaler).Equal(back.Public()) {
		t.Fatalf("reloaded key differs: %v", err)
	}
	if err := WriteKeyFile(path, edKey2()); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("overwrote an existing key file: %v", err)
	}
	if _, err := GenerateKey(KeyRSA, 512); err == nil {
		t.Fatal("generated a 512-bit RSA key")
	}
}

// The zone line has strings of at most 255 bytes that join to the record,
// which parses back to the same public key.
func TestZoneLine(t *testing.T) {
	for _, k := range []Key{{Signer: rsaKey()}, {Signer: edKey()}} {
		line, err := ZoneLine("example.org", "s1", k.Signer.Public())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(line, "s1._domainkey.example.org. IN TXT \"v=DKIM1; k="+string(TypeOf(k.Signer.Public()))+"; p=") {
			t.Fatalf("zone line %q", line)
		}
		_, quoted, _ := strings.Cut(line, " IN TXT ")
		var joined string
		for _, part := range strings.Split(quoted, `" "`) {
			part = strings.Trim(part, `"`)
			if len(part) > 255 {
				t.Fatalf("string of %d bytes", len(part))
			}
			joined += part
		}
		rec, err := ParseRecord(joined)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := rec.PublicKey()
		if err != nil || !pub.(equaler).Equal(k.Signer.Public()) {
			t.Fatalf("record %q does not give the key back: %v", joined, err)
		}
	}
	if got := SplitTXT(strings.Repeat("a", 600)); len(got) != 3 || len(got[0]) != 255 || len(got[2]) != 90 {
		t.Fatalf("SplitTXT: %d parts", len(got))
	}
}
