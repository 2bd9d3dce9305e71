package queue

import (
	"bytes"
	"path/filepath"
	"testing"
)

// The VERP key made for a queue file is the same after a reopen, so the
// senders of mail already out still verify.
func TestSecretKeptInQueueFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	st, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	k1, err := st.ReturnPath().Secret("verp", 32)
	if err != nil || len(k1) != 32 {
		t.Fatalf("Secret: %x, %v", k1, err)
	}
	st.Close()
	st, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k2, _ := st.ReturnPath().Secret("verp", 32)
	if !bytes.Equal(k1, k2) {
		t.Fatalf("key changed across a reopen: %x then %x", k1, k2)
	}
}

// A report's events and suppression entries land together; the message
// is found while queued and in the history, and not when unknown.
func TestRecordReportAndFindMessage(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "q.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d := st.NewDraft()
	d.Write([]byte("Subject: x\r\n\r\nhi\r\n"))
	env := Envelope{From: "app@example.org", Recipients: []Recipient{{Address: "gone@example.net"}}}
	if err := d.Commit(env); err != nil {
		t.Fatal(err)
	}
	id := d.ID()
	got, ok, err := st.History().Find(id)
	if err != nil || !ok || got.From != "app@example.org" {
		t.Fatalf("FindMessage(queued) = %+v, %v, %v", got, ok, err)
	}
	if _, err := st.Record(id, []Outcome{{Address: "gone@example.net", Status: StatusDelivered, Reply: "250 ok"}}); err != nil {
		t.Fatal(err)
	}
	got, ok, err = st.History().Find(id)
	if err != nil || !ok || got.ID != id || got.Recipients[0].Address != "gone@example.net" {
		t.Fatalf("FindMessage(finished) = %+v, %v, %v", got, ok, err)
	}
	if _, ok, _ := st.History().Find("18ECAF2DCCF80C22C6A8"); ok {
		t.Fatal("an unknown ID was found")
	}
	var shared []string
	st.Suppressions().SetAutoHook(func(sp Suppression) { shared = append(shared, sp.Address+" "+sp.Source) })
	ev := Event{Type: EventBounced, QueueID: id, Recipient: "gone@example.net", Reply: "550 5.1.1 gone", Async: true}
	if _, err := st.ReturnPath().Record([]Event{ev}, []Suppression{{Address: "Gone@example.net", Source: SourceAsyncBounce, Reply: ev.Reply}}); err != nil {
		t.Fatal(err)
	}
	evs, _, _ := st.Events().List(EventQuery{Types: []EventType{EventBounced}})
	sp, listed, _ := st.Suppressions().Get("gone@example.net")
	if len(evs) != 1 || !evs[0].Async || evs[0].EnhancedCode != "5.1.1" || !listed || sp.Source != SourceAsyncBounce {
		t.Fatalf("events %+v, suppression %+v (%v)", evs, sp, listed)
	}
	if len(shared) != 1 || shared[0] != "gone@example.net async_bounce" {
		t.Errorf("the shared list was told %v, want the async bounce", shared)
	}
	hist, err := st.History().List(HistoryQuery{Recipient: "gone@example.net"})
	if err != nil || len(hist) != 1 || hist[0].Recipients[0].Status != StatusDelivered ||
		len(hist[0].Late) != 1 || hist[0].Late[0].Type != EventBounced || hist[0].Late[0].EnhancedCode != "5.1.1" {
		t.Fatalf("history %+v, %v: want delivered, then the late bounce", hist, err)
	}
}

// An entry with a Once key is made the first time only, across reopens;
// the events of every report stand.
func TestRecordReportOnceKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	sp := Suppression{Address: "gone@example.net", Source: SourceAsyncBounce, Once: "verp/x/0"}
	other := Suppression{Address: "other@example.net", Source: SourceAsyncBounce, Once: "verp/x/1"}
	ev := Event{Type: EventBounced, QueueID: "x", Recipient: "gone@example.net", Async: true}
	for i, want := range []int{2, 0, 0} {
		st, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Suppressions().Remove(sp.Address); err != nil {
			t.Fatal(err)
		}
		made, err := st.ReturnPath().Record([]Event{ev}, []Suppression{sp, other})
		_, listed, _ := st.Suppressions().Get(sp.Address)
		st.Close()
		if err != nil || len(made) != want || listed != (want > 0) {
			t.Fatalf("report %d: made %+v (listed %v, %v), want %d", i, made, listed, err, want)
		}
	}
}
