package dkim

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"fmt"
	"testing"
)

// Whichever code signs (RSABackend), an RSA key's signatures are the
// bytes crypto/rsa makes: PKCS #1 v1.5 is deterministic, so a build with
// libcrypto signs exactly as one without.
func TestRSASignerMatchesCryptoRSA(t *testing.T) {
	key := rsaKey().(*rsa.PrivateKey)
	s := rsaSigner(key)
	for i := range 50 {
		digest := sha256.Sum256(fmt.Appendf(nil, "header hash %d", i))
		got, err := s.Sign(rand.Reader, digest[:], crypto.SHA256)
		if err != nil {
			t.Fatalf("%s: %v", RSABackend, err)
		}
		want, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, digest[:])
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("%s: signature %d differs from crypto/rsa's", RSABackend, i)
		}
	}
	if _, err := s.Sign(rand.Reader, []byte("not a digest"), crypto.SHA256); err == nil {
		t.Errorf("%s: a digest of the wrong length was signed", RSABackend)
	}
}
