package queue

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mappedRSS is the resident part of this process's mappings of path
// (/proc/self/smaps), in bytes.
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	var total int64
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			in = strings.HasSuffix(line, " "+path)
			continue
		}
		if in && len(f) == 3 && f[0] == "Rss:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			total += kb << 10
		}
	}
	return total
}

// TestWaitingMailIsNotResident: the queue file's pages that commits and
// an operator's scan read do not stay in the process's memory while the
// mail waits (242 MiB of a 286 MB file once did). What stays mapped
// is bounded by the pages read since the last release: releaseEvery, here
// 1 MiB's worth so that a small queue shows it (bbolt's own remaps, as the
// file doubles, drop the map too).
func TestWaitingMailIsNotResident(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a queue")
	}
	s, path := openTemp(t, testOpts(newClock()))
	s.mapLimit = 256                       // set before the first write reaches the committer
	fillWaiting(t, s, 8000, pattern(1200)) // about 16 MB of file
	if _, _, err := s.Admin().Shape(s.now(), "", 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Admin().List(ListOptions{Limit: 10000}); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	rss := mappedRSS(t, path)
	bound := int64(256*pageBytes) + 4<<20 // and the pages in use: the trees' upper levels, the last leaves
	t.Logf("file %d bytes (%d in use), %d bytes of it resident (bound %d)", st.FileBytes, st.FileBytes-st.FreeBytes, rss, bound)
	if rss > bound {
		t.Errorf("%d bytes of the queue file resident after the fill and a scan, want at most %d", rss, bound)
	}
}

// A walk over the whole schedule (the scheduler's, stepping over mail
// parked behind a held destination after a restart) leaves the file's
// pages released: the schedule's leaves lie among the envelopes' and the
// bodies', and the kernel maps the cached pages around each one read.
func TestScheduleWalkIsNotResident(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a queue")
	}
	s, path := openTemp(t, testOpts(newClock()))
	fillWaiting(t, s, 8000, pattern(1200))
	if err := s.releaseNow(); err != nil {
		t.Fatal(err)
	}
	walked := 0
	if _, _, err := s.NextEntry(time.Time{}, func(Entry) bool { walked++; return true }); err != nil {
		t.Fatal(err)
	}
	rss := mappedRSS(t, path)
	const bound = 4 << 20 // the pages in use: the trees' upper levels, the last leaves
	t.Logf("walked %d entries; %d bytes of the queue file resident (bound %d)", walked, rss, bound)
	if walked != 8000 || rss > bound {
		t.Errorf("walked %d entries, %d bytes of the queue file resident after, want 8000 and at most %d", walked, rss, bound)
	}
}
