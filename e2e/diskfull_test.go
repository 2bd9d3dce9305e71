package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/testfs"
	"github.com/relayq/relayq/smtptest"
)

// TestDiskFullSuspendedDestinationNoHotLoop, with the built binary: the
// queue on a small tmpfs, every
// domain routed to a closed port (so the destination is suspended), the
// tmpfs filled. When the suspension ends, the probe is refused again and
// the mail waiting for the destination cannot be postponed on the full
// disk. relayq must not retry that postpone in a tight loop (that burns
// a CPU until space is freed): it backs off, 1 s doubling to 30 s. Each
// message has a second recipient at another closed port, so it is moved
// forward on disk (its envelope rewritten): mail for one destination
// alone is parked by tag, which fits in the pages bbolt has free. Needs
// root for mount; skipped otherwise.
func TestDiskFullSuspendedDestinationNoHotLoop(t *testing.T) {
	dir := testfs.Tmpfs(t, "16m")
	down := smtptest.DownAddr(t)
	r := newRelay(t, down, "retry:\n  initial_delay: 1s\n  max_delay: 2s\n  jitter: 0s\n", "")
	route := fmt.Sprintf("    \"*\": %q\n", down)
	queuePath := filepath.Join(dir, "queue.db")
	rewriteConfig(t, r, map[string]string{
		route: route + fmt.Sprintf("    other.example: %q\n", smtptest.DownAddr(t)),
		// No reserve: this test is of a disk that something else filled.
		filepath.Join(r.dir, "queue.db") + "\"": queuePath + "\"\n  reserve_bytes: 0",
	})
	r.mustStart(t)
	t.Cleanup(func() { r.kill() })

	c := mustDial(t, r.addr)
	body := strings.Repeat(strings.Repeat("x", 98)+"\r\n", 10) // 1 kB
	// More messages than one scan batch (256) holds, and enough that
	// parking them all rewrites more of the queue file than bbolt's free
	// pages hold: the envelopes are compact (about 200 bytes each), and
	// with 400 the rewrite sometimes fitted in pages freed by earlier
	// commits, so it never failed.
	for i := 0; i < 2000; i++ {
		code, line, err := sendTwo(c, fmt.Sprintf("u%d@example.net", i), fmt.Sprintf("u%d@other.example", i), "Subject: "+fmt.Sprint(i)+"\r\n\r\n"+body)
		if code != 250 {
			t.Fatalf("message %d before the disk filled: %d %s %v", i, code, line, err)
		}
	}
	if err := r.log.waitFor("destination suspended", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	fill(t, filepath.Join(dir, "filler"))

	const failed = "postponing mail for a suspended destination failed"
	if err := r.log.waitFor(failed, 15*time.Second); err != nil {
		t.Fatalf("the full disk never made a postpone fail: %v", err)
	}
	// Count the failures over the next 5 seconds: a back-off of 1 s, 2 s,
	// 4 s allows about three; the hot loop made hundreds.
	start := r.log.count(failed)
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for done := false; !done; {
		select {
		case <-r.log.changedCh():
			if n := r.log.count(failed) - start; n > 10 {
				t.Fatalf("%d failed postpones within 5 s of the first: a hot loop", n)
			}
		case <-deadline.C:
			done = true
		}
	}
	t.Logf("%d failed postpones in the 5 s after the first", r.log.count(failed)-start)
	if code, err := r.term(10 * time.Second); err != nil || code != 0 {
		t.Errorf("SIGTERM on a full disk: exit %d, %v", code, err)
	}
}

// sendTwo sends one message to two recipients over c and returns the
// reply to its end of data (or to the command that failed first).
func sendTwo(c *client, to1, to2, body string) (int, string, error) {
	for _, l := range []string{"MAIL FROM:<app@example.org>", "RCPT TO:<" + to1 + ">", "RCPT TO:<" + to2 + ">", "DATA"} {
		code, line, err := c.cmd(l)
		if err != nil || code >= 400 {
			return code, line, err
		}
	}
	if err := c.write(strings.ReplaceAll("\r\n"+body, "\r\n.", "\r\n..")[2:] + ".\r\n"); err != nil {
		return 0, "", err
	}
	return c.reply()
}

// fill writes path until the file system says ENOSPC.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return
		}
	}
}

// count returns how many lines of the current run contain substr (up to
// the 10,000 lines a run keeps).
func (l *lineLog) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.recent {
		if strings.Contains(line, substr) {
			n++
		}
	}
	return n
}

// changedCh returns a channel closed when the next output arrives.
func (l *lineLog) changedCh() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}
