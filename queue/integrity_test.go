package queue

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
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

// A top-level bucket under a name relayq never writes is a damaged name:
// a flipped byte in the root page keeps the structure sound. Open used to
// take the file and start an empty envelopes bucket, every message
// silently out of reach; it refuses it now, naming the bucket, as the
// check does.
func TestOpenRefusesAnUnknownTopLevelBucket(t *testing.T) {
	path, _ := fillQueue(t, 6)
	damaged := []byte("envelo\x10es")
	renameBucket(t, path, bucketEnvelopes, damaged)
	_, err := Open(path, testOpts(newClock()))
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), fmt.Sprintf("%q", damaged)) {
		t.Fatalf("Open: %v, want ErrDamaged naming %q", err, damaged)
	}
	problems, err := StructureProblems(path, 0)
	if err != nil || len(problems) != 1 {
		t.Fatalf("StructureProblems = %q, %v; want the one bucket", problems, err)
	}
}

// renameBucket moves the top-level bucket from, with every key, to the
// name to, as a byte flipped in the root page's key would.
func renameBucket(t *testing.T, path string, from, to []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		src := tx.Bucket(from)
		dst, err := tx.CreateBucket(to)
		if err != nil {
			return err
		}
		if err := src.ForEach(func(k, v []byte) error { return dst.Put(k, v) }); err != nil {
			return err
		}
		return tx.DeleteBucket(from)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Every top-level bucket the store declares is one Open accepts: a bucket
// added without joining rootBuckets would make relayq refuse its own file.
func TestRootBucketsNameEveryBucket(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(node ast.Node) bool {
			vs, ok := node.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "bucket") || i >= len(vs.Values) {
					continue
				}
				call, ok := vs.Values[i].(*ast.CallExpr)
				if !ok || len(call.Args) != 1 {
					continue
				}
				lit, ok := call.Args[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				s, _ := strconv.Unquote(lit.Value)
				n++
				if !RootBucket([]byte(s)) {
					t.Errorf("%s (%q) is not in rootBuckets", name.Name, s)
				}
			}
			return true
		})
	}
	if n < len(rootBuckets) {
		t.Errorf("found %d bucket declarations, fewer than the %d rootBuckets", n, len(rootBuckets))
	}
}
