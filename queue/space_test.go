package queue

import (
	"os"
	"testing"
)

// TestFreedSpaceIsReused: delivered (deleted) mail leaves free pages that
// later mail reuses, across restarts too, so a queue that keeps draining
// stops growing after its first busy moment (issue 12, defect 8: 85 MB
// after 3,000 messages of 600 KB had gone).
func TestFreedSpaceIsReused(t *testing.T) {
	o := testOpts(newClock())
	s, path := openTemp(t, o)
	body := pattern(600<<10 + 10*1000)
	round := func() {
		var ids []string
		for i := range 10 {
			ids = append(ids, enqueue(t, s, body[:600<<10+i*1000], "a@example.net"))
		}
		for _, id := range ids {
			if err := s.Delete(id); err != nil {
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
	round()
	round()
	first := size()
	for i := range 8 {
		round()
		if i%3 == 2 { // restarts, clean and otherwise, keep the free pages
			s.Close()
			s = openAt(t, path, o)
		}
	}
	if got := size(); got > first+first/4 {
		t.Errorf("file grew from %d to %d bytes over 8 rounds of the same load", first, got)
	}
	st := s.Stats()
	t.Logf("file %d bytes after 2 rounds, %d after 10; free %d", first, size(), st.FreeBytes)
	if st.FreeBytes < st.FileBytes/2 {
		t.Errorf("drained queue: %d of %d bytes free, want most", st.FreeBytes, st.FileBytes)
	}
}
