package dkim

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"strings"
	"testing"
)

// BenchmarkSign1KiB signs a 1 KiB message as the submission path does.
func BenchmarkSign1KiB(b *testing.B) {
	msg := testMessage + strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd\r\n", 1024/64)
	for _, k := range []struct {
		name string
		key  func() crypto.Signer
	}{
		{"rsa2048", rsaKey},
		{"ed25519", edKey},
	} {
		b.Run(k.name, func(b *testing.B) {
			s := NewSigner(Config{Keys: []Key{{Domain: "example.org", Selector: "s", Signer: k.key()}}})
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				m := s.Begin()
				m.Write([]byte(msg))
				if _, err := m.Finish(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkKeySign is the private-key operation alone, the floor under
// BenchmarkSign1KiB: what signing costs per key whatever the rest does.
func BenchmarkKeySign(b *testing.B) {
	digest := sha256.Sum256([]byte("header hash"))
	for _, k := range []struct {
		name string
		key  func() crypto.Signer
		hash crypto.Hash
	}{
		{"rsa2048", rsaKey, crypto.SHA256},
		{"ed25519", edKey, 0},
	} {
		b.Run(k.name, func(b *testing.B) {
			key := k.key()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := key.Sign(rand.Reader, digest[:], k.hash); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
