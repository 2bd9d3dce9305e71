package repair

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/relayq/relayq/queue/queuetest"
)

// Compact fails when the directory fsync that makes its rename durable
// fails: the new file may not survive a crash, so it must not report
// success.
func TestCompactReportsDirectorySyncFailure(t *testing.T) {
	c := queuetest.NewClock()
	path := filepath.Join(t.TempDir(), "queue.db")
	s := queuetest.Open(t, path, queuetest.Options(c))
	queuetest.Enqueue(t, s, []byte("hi"), "a@example.net")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	errSync := errors.New("fsync: input/output error")
	old := syncDir
	syncDir = func(string) error { return errSync }
	t.Cleanup(func() { syncDir = old })
	rep, err := Compact(path, queuetest.Options(c))
	if !errors.Is(err, errSync) {
		t.Fatalf("Compact = %+v, %v; want the fsync's error", rep, err)
	}
}
