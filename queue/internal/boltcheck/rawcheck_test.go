package boltcheck_test

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/internal/boltcheck"
)

// FuzzCheckStructure feeds damaged queue files to the structure check,
// which reads bbolt's pages itself: it must report, never panic or hang.
func FuzzCheckStructure(f *testing.F) {
	o := queue.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	dir := f.TempDir()
	s, err := queue.Open(filepath.Join(dir, "queue.db"), o)
	if err != nil {
		f.Fatal(err)
	}
	d := s.NewDraft()
	d.Write(bytes.Repeat([]byte("twenty KiB of body\r\n"), 20<<10/20))
	d.Commit(queue.Envelope{Recipients: []queue.Recipient{{Address: "a@example.net"}}})
	d = s.NewDraft()
	d.Write([]byte("small"))
	d.Commit(queue.Envelope{Recipients: []queue.Recipient{{Address: "b@example.net"}}})
	s.Close()
	good, err := os.ReadFile(filepath.Join(dir, "queue.db"))
	if err != nil {
		f.Fatal(err)
	}
	if p := boltcheck.Problems(bytes.NewReader(good), int64(len(good))); len(p) > 0 {
		f.Fatalf("a sound file has problems: %v", p)
	}
	// The file is fixed and the fuzzer picks the damage: large inputs make
	// the fuzzer itself slow.
	f.Add(uint32(0), byte(0), uint32(0), byte(0), uint32(0), byte(0))
	f.Add(uint32(4096*2+10), byte(0xff), uint32(4096*3+20), byte(1), uint32(100), byte(7))
	f.Fuzz(func(t *testing.T, a1 uint32, x1 byte, a2 uint32, x2 byte, a3 uint32, x3 byte) {
		file := bytes.Clone(good)
		file[int(a1)%len(file)] ^= x1
		file[int(a2)%len(file)] ^= x2
		file[int(a3)%len(file)] ^= x3
		r := bytes.NewReader(file)
		_ = boltcheck.Problems(r, int64(len(file)))
		// Salvage's walk, which goes on past problems.
		if m, _, err := boltcheck.ReadMeta(r, int64(len(file)), false); err == nil {
			_, _, _ = boltcheck.Salvage(r, m, func([][]byte, []byte, []byte) error { return nil })
		}
	})
}
