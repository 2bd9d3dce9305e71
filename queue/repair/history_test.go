package repair

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/queue/queuetest"
)

// historyAndEvents is what the events and history API show of the file.
func historyAndEvents(t *testing.T, s *queue.Store) ([]queue.Finished, []byte) {
	t.Helper()
	hist, err := s.History().List(queue.HistoryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	evs, _, err := s.Events().List(queue.EventQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(evs)
	return hist, js
}

// Salvage and Compact keep finished messages and the events that share
// their records, and the dictionary those records name, as they were.
func TestSalvageAndCompactKeepHistory(t *testing.T) {
	c := queuetest.NewClock()
	path := filepath.Join(t.TempDir(), "queue.db")
	s := queuetest.Open(t, path, queuetest.Options(c))
	for range 4 {
		id := queuetest.Enqueue(t, s, []byte("hi\r\n"), "a@example.net", "b@example.net")
		if _, err := s.Record(id, []queue.Outcome{
			{Address: "a@example.net", Status: queue.StatusDelivered, Reply: "250 ok", RemoteMTA: "mx.example.net"},
			{Address: "b@example.net", Status: queue.StatusBounced, Reply: "550 5.1.1 no", RemoteMTA: "mx.example.net"}}); err != nil {
			t.Fatal(err)
		}
	}
	wantHist, wantEvents := historyAndEvents(t, s)
	if len(wantHist) != 4 || wantHist[0].From != "sender@example.org" {
		t.Fatalf("history before: %+v", wantHist)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	salvaged := filepath.Join(t.TempDir(), "salvaged.db")
	if _, err := Salvage(path, salvaged, queuetest.Options(c)); err != nil {
		t.Fatal(err)
	}
	if _, err := Compact(path, queuetest.Options(c)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{salvaged, path} {
		s := queuetest.Open(t, p, queuetest.Options(c))
		hist, evs := historyAndEvents(t, s)
		if !reflect.DeepEqual(hist, wantHist) || string(evs) != string(wantEvents) {
			t.Errorf("%s: history or events differ after repair:\n%s\nwant\n%s", filepath.Base(p), evs, wantEvents)
		}
		s.Close()
	}
}
