package queue

import (
	"os"
	"testing"
)

// TestFreedSpaceIsReused: delivered (deleted) mail leaves free pages that
// later mail reuses, across restarts too, so a queue that keeps draining
// stops growing after its first busy moment (without the synced freelist:
// 85 MB after 3,000 messages of 600 KB had gone).
//
// The bound is a multiple of the most mail ever queued at once, not of the
// size after the first rounds: bbolt grows a small file by doubling its
// mapping, and its map freelist hands out free runs in map order, so one
// run in twenty needed a page past 8 MiB and the file became 16 MiB while
// most of it stayed free. Unbounded growth is what users notice.
func TestFreedSpaceIsReused(t *testing.T) {
	o := testOpts(newClock())
	s, path := openTemp(t, o)
	body := pattern(600<<10 + 10*1000)
	live := int64(0) // the most mail queued at once: one round's messages
	for i := range 10 {
		live += int64(600<<10 + i*1000)
	}
	round := func() {
		var ids []string
		for i := range 10 {
			ids = append(ids, enqueue(t, s, body[:600<<10+i*1000], "a@example.net"))
		}
		for _, id := range ids {
			if err := s.Admin().Delete(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	for i := range 10 {
		round()
		if i%3 == 2 { // restarts, clean and otherwise, keep the free pages
			s.Close()
			s = openAt(t, path, o)
		}
	}
	if got := size(); got > 3*live {
		t.Errorf("file %d bytes after 10 rounds of %d bytes queued at once; want at most %d", got, live, 3*live)
	}
	st := s.Stats()
	t.Logf("file %d bytes after 10 rounds of %d queued at once; free %d", size(), live, st.FreeBytes)
	if st.FreeBytes < st.FileBytes/2 {
		t.Errorf("drained queue: %d of %d bytes free, want most", st.FreeBytes, st.FileBytes)
	}
}
