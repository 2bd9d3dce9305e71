package queue

import (
	"maps"
	"testing"

	"github.com/relayq/relayq/internal/identity"
)

// Stats counts stored messages by stream, through outcomes and deletion,
// and the count survives a restart (Open recounts).
func TestStatsByStream(t *testing.T) {
	c := newClock()
	s, path := openTemp(t, testOpts(c))
	commit := func(stream, rcpt string) string {
		d := s.NewDraft()
		d.Write([]byte("Subject: x\r\n\r\nx\r\n"))
		if err := d.Commit(Envelope{From: "a@example.org", Sender: identity.Sender{Stream: stream}, Recipients: []Recipient{{Address: rcpt}}}); err != nil {
			t.Fatal(err)
		}
		return d.ID()
	}
	for i, st := range []string{"bulk", "bulk", "bulk", "transactional", "", "a", "b", "c", "d"} {
		commit(st, string(rune('a'+i))+"@example.net")
	}
	tx := commit("transactional", "z@example.net")
	if _, err := s.Record(tx, []Outcome{{Address: "z@example.net", Status: StatusDelivered, Reply: "250 ok"}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"bulk": 3, "transactional": 1, "a": 1, "b": 1, "c": 1, "d": 1}
	if got := s.Stats().Streams; !maps.Equal(got, want) {
		t.Errorf("streams %v, want %v", got, want)
	}
	s.Close()
	s = openAt(t, path, testOpts(c))
	if got := s.Stats().Streams; !maps.Equal(got, want) {
		t.Errorf("after reopening: streams %v, want %v", got, want)
	}
}
