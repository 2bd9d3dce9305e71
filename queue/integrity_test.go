package queue

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// fillQueue stores n messages of assorted sizes (small, inline, chunked)
// and returns their bodies by ID; the store is closed afterwards.
func fillQueue(t *testing.T, n int) (string, map[string][]byte) {
	t.Helper()
	o := testOpts(newClock())
	o.InlineLimit, o.ChunkSize = 64<<10, 32<<10
	s, path := openTemp(t, o)
	bodies := map[string][]byte{}
	for i := range n {
		body := append([]byte(fmt.Sprintf("message %d\r\n", i)), pattern([]int{200, 20 << 10, 100 << 10}[i%3]+i)...)
		id := enqueue(t, s, body, "a@example.net", "b@example.org")
		bodies[id] = body
	}
	// Delivered and deleted messages leave free pages behind, as in life.
	for i := range n / 4 {
		id := enqueue(t, s, pattern(50<<10+i), "gone@example.net")
		if err := s.Admin().Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, bodies
}

// TestFlippedBytesNeverCrashOrAlter flips random bytes in copies of a
// queue file: Open either refuses it (ErrDamaged) or opens it, and then
// every message reads back byte-identical or fails with ErrDamaged (and is
// quarantined), and writes over the whole queue do not crash either.
func TestFlippedBytesNeverCrashOrAlter(t *testing.T) {
	path, bodies := fillQueue(t, 60)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var refused, opened, identical, quarantined int
	for seed := int64(1); seed <= 16; seed++ {
		rng := rand.New(rand.NewSource(seed))
		b := bytes.Clone(orig)
		// Leave the meta pages alone half the time: bbolt's own checksum
		// catches damage there, the interesting cases are in the data.
		from := 0
		if seed%2 == 0 {
			from = 2 * 4096
		}
		for range 1 + rng.Intn(200) {
			b[from+rng.Intn(len(b)-from)] ^= byte(1 + rng.Intn(255))
		}
		p := filepath.Join(t.TempDir(), "queue.db")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(p, testOpts(newClock()))
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("seed %d: Open: %v, want ErrDamaged", seed, err)
			}
			refused++
			continue
		}
		opened++
		for id, want := range bodies {
			rc, err := s.Body(id)
			var got []byte
			if err == nil {
				got, err = io.ReadAll(rc)
				rc.Close()
			}
			switch {
			case err == nil && bytes.Equal(got, want):
				identical++
			case err == nil:
				t.Errorf("seed %d: %s read back altered", seed, id)
			case errors.Is(err, ErrDamaged) || errors.Is(err, ErrNotFound):
				quarantined++
			default:
				// A fault caught in a read is an error too; never altered.
				quarantined++
			}
		}
		// Writes free and allocate pages: where the freelist is damaged
		// this used to panic ("page ... already freed").
		for id := range bodies {
			_ = s.Admin().Hold(id)
			_ = s.Admin().Delete(id)
		}
		if err := s.Close(); err != nil {
			t.Logf("seed %d: Close: %v", seed, err)
		}
	}
	t.Logf("refused %d, opened %d; messages identical %d, unreadable or quarantined %d", refused, opened, identical, quarantined)
}

// TestOpenRefusesGarbage: a file that is not a queue at all.
func TestOpenRefusesGarbage(t *testing.T) {
	p := filepath.Join(t.TempDir(), "queue.db")
	if err := os.WriteFile(p, bytes.Repeat([]byte("not a bbolt file "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(p, testOpts(newClock())); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Open of garbage: %v, want ErrDamaged", err)
	}
}
