package repair

import (
	"errors"
	"path/filepath"
	"testing"
)

// Compact fails when the directory fsync that makes its rename durable
// fails: the new file may not survive a crash, so it must not report
// success.
func TestCompactReportsDirectorySyncFailure(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "queue.db")
	s := openAt(t, path, testOpts(c))
	enqueue(t, s, []byte("hi"), "a@example.net")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	errSync := errors.New("fsync: input/output error")
	old := syncDir
	syncDir = func(string) error { return errSync }
	t.Cleanup(func() { syncDir = old })
	rep, err := Compact(path, testOpts(c))
	if !errors.Is(err, errSync) {
		t.Fatalf("Compact = %+v, %v; want the fsync's error", rep, err)
	}
}
