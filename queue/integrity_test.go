package queue

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
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
		if err := s.Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, bodies
}

// copyFile copies src to a new file in dir.
func copyFile(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "queue.db")
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestTruncatedFileIsRefusedNotCrashed: `truncate -s 50%` made Open fault
// inside bbolt (SIGSEGV) during recovery; it must be refused with the
// advice to run the check.
func TestTruncatedFileIsRefusedNotCrashed(t *testing.T) {
	path, _ := fillQueue(t, 60)
	fi, _ := os.Stat(path)
	for _, frac := range []int64{50, 10} {
		p := copyFile(t, path)
		if err := os.Truncate(p, fi.Size()*frac/100); err != nil {
			t.Fatal(err)
		}
		_, err := Open(p, testOpts(newClock()))
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "run `relayq queue check`") {
			t.Fatalf("Open of a file cut to %d%%: %v, want ErrDamaged with advice", frac, err)
		}
		t.Logf("%d%%: %v", frac, err)
		rep, err := Check(p, CheckOptions{})
		if err != nil || rep.OK() {
			t.Errorf("Check of a file cut to %d%%: %+v, %v; want damage reported", frac, rep, err)
		}
	}
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
			_ = s.Hold(id)
			_ = s.Delete(id)
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

func FuzzParseMeta(f *testing.F) {
	good := make([]byte, metaSize)
	ne := binary.NativeEndian
	ne.PutUint32(good[metaHeader:], metaMagic)
	ne.PutUint32(good[metaHeader+4:], metaVersion)
	ne.PutUint32(good[metaHeader+8:], 4096)
	ne.PutUint64(good[metaHeader+32:], 2)
	ne.PutUint64(good[metaHeader+40:], 4)
	f.Add(good)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMeta(b)
		if err != nil {
			return
		}
		if m.pageSize < 512 || m.pgid < 4 || m.freelist != pgidNoFreelist && m.freelist >= m.pgid {
			t.Fatalf("accepted an implausible meta page: %+v", m)
		}
	})
}

// FuzzCheckStructure feeds damaged queue files to the structure check,
// which reads bbolt's pages itself: it must report, never panic or hang.
func FuzzCheckStructure(f *testing.F) {
	o := testOpts(newClock())
	dir := f.TempDir()
	s, err := Open(filepath.Join(dir, "queue.db"), o)
	if err != nil {
		f.Fatal(err)
	}
	d := s.NewDraft()
	d.Write(pattern(20 << 10))
	d.Commit(Envelope{Recipients: []Recipient{{Address: "a@example.net"}}})
	d = s.NewDraft()
	d.Write([]byte("small"))
	d.Commit(Envelope{Recipients: []Recipient{{Address: "b@example.net"}}})
	s.Close()
	good, err := os.ReadFile(filepath.Join(dir, "queue.db"))
	if err != nil {
		f.Fatal(err)
	}
	if p := structureProblems(bytes.NewReader(good), int64(len(good))); len(p) > 0 {
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
		_ = structureProblems(r, int64(len(file)))
		// Salvage's walk, which goes on past problems.
		if m, _, err := readMeta(r, int64(len(file)), false); err == nil {
			c := &rawChecker{f: r, m: m, ps: int64(m.pageSize), free: map[uint64]bool{}, seen: map[uint64]bool{},
				salvage: true, emit: func([][]byte, []byte, []byte) error { return nil }}
			_ = c.tree(m.root, nil, nil, 0)
		}
	})
}
