package dkim

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"strings"
	"testing"
	"time"
)

// reportCPU adds cpu-us/op, the process's CPU time per operation since
// start: on a machine other programs keep busy, ns/op measures the share
// of the cores the benchmark got, this the work it did.
func reportCPU(b *testing.B, start time.Duration) {
	if d := cpuTime() - start; d > 0 {
		b.ReportMetric(float64(d.Microseconds())/float64(b.N), "cpu-us/op")
	}
}

// bareRSAKey is rsaKey without its precomputed CRT values, as a key built
// from its numbers (rsa.PrivateKey{N, E, D, Primes}) comes.
func bareRSAKey() crypto.Signer {
	k := *rsaKey().(*rsa.PrivateKey)
	k.Precomputed = rsa.PrecomputedValues{}
	return &k
}

// BenchmarkSign1KiB signs a 1 KiB message as the submission path does.
// rsa2048-bare is a key without precomputed values: the Signer prepares it
// once, so it signs as fast as a parsed key.
func BenchmarkSign1KiB(b *testing.B) {
	msg := testMessage + strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd\r\n", 1024/64)
	for _, k := range []struct {
		name string
		key  func() crypto.Signer
	}{
		{"rsa2048", rsaKey},
		{"rsa2048-bare", bareRSAKey},
		{"ed25519", edKey},
	} {
		b.Run(k.name, func(b *testing.B) {
			s := NewSigner(Config{Keys: []Key{{Domain: "example.org", Selector: "s", Signer: k.key()}}})
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				m := s.Begin()
				m.Write([]byte(msg))
				if _, err := m.Finish(); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, start)
		})
	}
}

// BenchmarkKeySign is the private-key operation alone, the floor under
// BenchmarkSign1KiB: what signing costs per key whatever the rest does.
// rsa2048-bare is what crypto/rsa costs for a key without precomputed
// values, which it derives again for every signature; rsa2048-backend is
// the signer the Signer uses (RSABackend: crypto/rsa, or libcrypto in a
// build with the openssl tag). Compare cpu-us/op of rsa2048 with `openssl
// speed rsa2048` (docs/performance.md).
func BenchmarkKeySign(b *testing.B) {
	digest := sha256.Sum256([]byte("header hash"))
	for _, k := range []struct {
		name string
		key  func() crypto.Signer
		hash crypto.Hash
	}{
		{"rsa2048", rsaKey, crypto.SHA256},
		{"rsa2048-bare", bareRSAKey, crypto.SHA256},
		{"rsa2048-backend", func() crypto.Signer { return rsaSigner(rsaKey().(*rsa.PrivateKey)) }, crypto.SHA256},
		{"ed25519", edKey, 0},
	} {
		b.Run(k.name, func(b *testing.B) {
			key := k.key()
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				if _, err := key.Sign(rand.Reader, digest[:], k.hash); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, start)
		})
	}
}

// BenchmarkSignParallel signs 1 KiB messages from GOMAXPROCS goroutines at
// once, as concurrent sessions do: each session signs its own message on
// whatever core runs it, so signatures per second grow with the cores
// while cpu-us/op stays that of BenchmarkSign1KiB.
func BenchmarkSignParallel(b *testing.B) {
	msg := []byte(testMessage + strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd\r\n", 1024/64))
	s := NewSigner(Config{Keys: []Key{{Domain: "example.org", Selector: "s", Signer: rsaKey()}}})
	b.ReportAllocs()
	start := cpuTime()
	t0 := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m := s.Begin()
			m.Write(msg)
			if _, err := m.Finish(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "sign/s")
	reportCPU(b, start)
}
