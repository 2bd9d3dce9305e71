package queue

import (
	"errors"
	"testing"
	"time"
)

// commitKeyed commits a one-recipient message that keeps key k.
func commitKeyed(t *testing.T, s *Store, k IdempotencyKey) (string, error) {
	t.Helper()
	d := s.NewDraft()
	if _, err := d.Write([]byte("Subject: x\r\n\r\nhi\r\n")); err != nil {
		t.Fatal(err)
	}
	d.KeepKey(k)
	return d.ID(), d.Commit(Envelope{From: "a@example.org", Recipients: []Recipient{{Address: "b@example.net"}}})
}

func TestKeptKeyStoresOneMessageAndReplaysTheFirstAnswer(t *testing.T) {
	c := newClock()
	s, path := openTemp(t, testOpts(c))
	k := IdempotencyKey{Key: "user:app\x00order-1", Window: time.Hour, Fingerprint: []byte("fp"), Answer: []byte(`{"queue_id":"x"}`)}
	first, err := commitKeyed(t, s, k)
	if err != nil {
		t.Fatal(err)
	}
	k.Answer = []byte("other")
	_, err = commitKeyed(t, s, k)
	var dup *DuplicateError
	if !errors.As(err, &dup) || dup.Replay.ID != first || string(dup.Replay.Answer) != `{"queue_id":"x"}` || string(dup.Replay.Fingerprint) != "fp" {
		t.Fatalf("second commit: %v (%+v), want the duplicate of %s", err, dup, first)
	}
	if n := s.Stats().Messages; n != 1 {
		t.Fatalf("%d messages stored, want 1", n)
	}
	// The key survives a reopen: it was committed with the message.
	s.Close()
	s = openAt(t, path, testOpts(c))
	r, found, err := s.Replay(k.Key)
	if err != nil || !found || r.ID != first {
		t.Fatalf("after reopen: %+v %v %v", r, found, err)
	}
}

func TestKeptKeyIsNewAgainAfterItsWindow(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	k := IdempotencyKey{Key: "ip:127.0.0.1\x00k", Window: time.Hour}
	first, err := commitKeyed(t, s, k)
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Hour - time.Second)
	if _, err := commitKeyed(t, s, k); err == nil {
		t.Fatal("a repeat inside the window was stored")
	}
	c.Advance(time.Second)
	if _, found, _ := s.Replay(k.Key); found {
		t.Fatal("the key is still found when its window has passed")
	}
	second, err := commitKeyed(t, s, k)
	if err != nil || second == first {
		t.Fatalf("after the window: %s, %v; want a new message", second, err)
	}
	// The renewed key holds for a full window from its new commit, and the
	// old expiry entry, swept by a later write, does not delete it.
	c.Advance(time.Minute)
	if _, err := commitKeyed(t, s, IdempotencyKey{Key: "other", Window: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if r, found, _ := s.Replay(k.Key); !found || r.ID != second {
		t.Fatalf("renewed key: %+v %v, want %s", r, found, second)
	}
}

func FuzzDecodeReplay(f *testing.F) {
	f.Add(encodeReplay(&Replay{ID: "0123", Expires: time.Unix(5, 0), Fingerprint: []byte{1, 2}, Answer: []byte("a")}))
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeReplay(b)
		if err != nil {
			return
		}
		back, err := decodeReplay(encodeReplay(&r))
		if err != nil || back.ID != r.ID || string(back.Answer) != string(r.Answer) {
			t.Fatalf("round trip of %+v: %+v %v", r, back, err)
		}
	})
}
