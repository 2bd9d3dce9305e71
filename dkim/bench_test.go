package dkim

import (
	"strings"
	"testing"
)

// BenchmarkSign1KiB signs a 1 KiB message as the submission path does.
func BenchmarkSign1KiB(b *testing.B) {
	msg := testMessage + strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd\r\n", 1024/64)
	for _, k := range []struct {
		name string
		key  Key
	}{
		{"rsa2048", Key{Domain: "example.org", Selector: "s", Signer: rsaKey()}},
		{"ed25519", Key{Domain: "example.org", Selector: "s", Signer: edKey()}},
	} {
		b.Run(k.name, func(b *testing.B) {
			s := NewSigner(Config{Keys: []Key{k.key}})
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
