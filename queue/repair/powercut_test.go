package repair

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/relayq/relayq/internal/testfs"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
)

// crashQueue fills a queue file on a crash file system with n messages,
// all synced, and returns its path and the bodies by ID.
func crashQueue(t *testing.T, c *testfs.CrashFS, n int) (string, map[string][]byte) {
	t.Helper()
	path := filepath.Join(c.Dir(), "queue.db")
	s, err := queue.Open(path, queuetest.Options(queuetest.NewClock()))
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string][]byte{}
	for i := range n {
		b := []byte(fmt.Sprintf("Subject: %d\r\n\r\n%s\r\n", i, bytes.Repeat([]byte{'x'}, 100*i)))
		bodies[queuetest.Enqueue(t, s, b, "a@example.net")] = b
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, bodies
}

// holdsAll opens the queue file at path as the relay would and checks
// that it holds exactly bodies, byte for byte.
func holdsAll(t *testing.T, path string, bodies map[string][]byte, when string) {
	t.Helper()
	s, err := queue.Open(path, queuetest.Options(queuetest.NewClock()))
	if err != nil {
		t.Fatalf("%s: the queue file does not open: %v", when, err)
	}
	defer s.Close()
	if got := s.Stats().Messages; got != len(bodies) {
		t.Errorf("%s: %d messages, want %d", when, got, len(bodies))
	}
	for id, want := range bodies {
		if _, err := s.Get(id); err != nil {
			t.Errorf("%s: message %s: %v", when, id, err)
			continue
		}
		if got := queuetest.ReadBody(t, s, id); !bytes.Equal(got, want) {
			t.Errorf("%s: message %s: body differs", when, id)
		}
	}
}

// cutEverySync runs op with the power cut at its first sync, then (on
// what survived) at its second, and so on, until op finishes before the
// cut; after each cut, check looks at what survived. It returns the
// number of cuts.
func cutEverySync(t *testing.T, c *testfs.CrashFS, op func() error, check func(when string)) int {
	t.Helper()
	for n := 1; ; n++ {
		if n > 200 {
			t.Fatal("still cut after 200 syncs")
		}
		c.CutAtSync(n)
		err := op()
		if !c.IsDown() {
			c.CutAtSync(0)
			if err != nil {
				t.Fatalf("without a cut: %v", err)
			}
			return n - 1
		}
		if err := c.PowerOn(); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("power cut at sync %d", n))
	}
}

// Compaction cut at any of its syncs leaves a queue file that opens and
// holds every message; a compaction that returned has replaced the file
// for good (its rename survives a cut right after).
func TestCompactSurvivesPowerCuts(t *testing.T) {
	c := testfs.Crash(t)
	path, bodies := crashQueue(t, c, 20)
	var rep *CompactReport
	cuts := cutEverySync(t, c, func() error {
		var err error
		rep, err = Compact(path, queuetest.Options(queuetest.NewClock()))
		return err
	}, func(when string) { holdsAll(t, path, bodies, when) })
	c.Cut()
	if err := c.PowerOn(); err != nil {
		t.Fatal(err)
	}
	holdsAll(t, path, bodies, "power cut after the compaction")
	if cuts == 0 || rep == nil {
		t.Fatalf("compaction cut %d times, report %+v", cuts, rep)
	}
	t.Logf("compaction cut at each of its %d syncs", cuts)
}

// Salvage cut at any of its syncs leaves the file it reads as it was; a
// salvage that returned has a copy that survives a cut right after.
func TestSalvageSurvivesPowerCuts(t *testing.T) {
	c := testfs.Crash(t)
	path, bodies := crashQueue(t, c, 20)
	n := 0
	var to string
	cuts := cutEverySync(t, c, func() error {
		n++
		to = filepath.Join(c.Dir(), "salvaged", fmt.Sprintf("copy-%d.db", n))
		_, err := Salvage(path, to, queuetest.Options(queuetest.NewClock()))
		return err
	}, func(when string) { holdsAll(t, path, bodies, when) })
	c.Cut()
	if err := c.PowerOn(); err != nil {
		t.Fatal(err)
	}
	holdsAll(t, to, bodies, "the salvaged copy after a power cut")
	if cuts == 0 {
		t.Fatal("salvage was never cut")
	}
	t.Logf("salvage cut at each of its %d syncs", cuts)
}
