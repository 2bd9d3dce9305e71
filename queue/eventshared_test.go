package queue

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/relayq/relayq/internal/identity"
)

// sampleDict is a dictionary of two entries for the samples.
var sampleDict = []string{"app@example.org", "mx.x.test"}

func sampleIntern(s string) (uint32, bool) {
	for i, d := range sampleDict {
		if d == s {
			return uint32(i + 1), true
		}
	}
	return 0, false
}

func sampleLookup(id uint32) (string, bool) {
	if id < 1 || int(id) > len(sampleDict) {
		return "", false
	}
	return sampleDict[id-1], true
}

// sharedSample is a finished message and its events' records as the
// committer writes them: the history record at sequence 5, a queued
// event before it (forward), a delivered and a dsn_sent event after it.
func sharedSample() (histKey, hist []byte, evs map[uint64][]byte, env *Envelope) {
	fin := time.Date(2026, 12, 2, 3, 0, 0, 123456789, time.UTC)
	env = &Envelope{ID: "18ECAF2DCCF80C22C6A8", From: "app@example.org", MessageID: "<m@example.org>", Sender: identity.Sender{Stream: "billing"},
		Created: fin.Add(-time.Second), Size: 1200, Recipients: []Recipient{
			{Address: "a@x.test", Status: StatusDelivered, Attempts: 1, LastAttempt: fin, LastReply: "250 2.0.0 ok", RemoteMTA: "mx.x.test"},
			{Address: "b@x.test", Status: StatusBounced, Attempts: 1, LastAttempt: fin, LastReply: "550 5.1.1 no"}}}
	packed, _ := packID(env.ID)
	histKey = sharedHistoryKey(5, packed)
	hist = appendSharedHistory(nil, env, fin, sampleIntern)
	h := sharedHistory{seq: 5, env: env, finished: fin}
	evs = map[uint64][]byte{}
	for seq, ev := range map[uint64]Event{
		3: {Type: EventQueued, QueueID: env.ID, MessageID: env.MessageID, From: env.From, Recipient: "b@x.test", Stream: "billing", Time: fin.Add(-time.Second).Truncate(time.Millisecond)},
		5: {Type: EventDelivered, QueueID: env.ID, MessageID: env.MessageID, From: env.From, Recipient: "a@x.test", Stream: "billing",
			Attempt: 1, Reply: "250 2.0.0 ok", EnhancedCode: "2.0.0", RemoteMTA: "mx.x.test", TLS: "TLSv1.3", Time: fin.Truncate(time.Millisecond)},
		6: {Type: EventDSNSent, QueueID: env.ID, MessageID: env.MessageID, From: "other@example.org", Recipient: "app@example.org",
			BounceQueueID: "18ECAF2DCCF80C22C6B0", Time: fin.Truncate(time.Millisecond)},
	} {
		v1, _ := appendEvent(nil, &ev)
		evs[seq] = appendSharedEvent(nil, &ev, h, seq, v1[5])
	}
	return histKey, hist, evs, env
}

// TestSharedRecordsRoundTrip: an event that shares its message's history
// record reads back as the event that was written, fields the message
// holds and fields it does not alike.
func TestSharedRecordsRoundTrip(t *testing.T) {
	histKey, hist, evs, env := sharedSample()
	f, err := decodeSharedHistory(histKey, hist, sampleLookup)
	if err != nil || f.ID != env.ID || !reflect.DeepEqual(f.Envelope, *env) {
		t.Fatalf("history = %+v, %v", f, err)
	}
	s, _ := openTemp(t, testOpts(newClock()))
	err = s.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketEvents)
		if err != nil {
			return err
		}
		if err := b.Put(histKey, hist); err != nil {
			return err
		}
		d, err := tx.CreateBucketIfNotExists(bucketStrings)
		if err != nil {
			return err
		}
		for i, s := range sampleDict {
			v := binary.BigEndian.AppendUint32(nil, crc32.Checksum([]byte(s), castagnoli))
			if err := d.Put(dictKey(uint32(i+1)), append(v, s...)); err != nil {
				return err
			}
		}
		for seq, v := range evs {
			if err := b.Put(binary.BigEndian.AppendUint64(nil, seq), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := allEvents(t, s, "")
	if len(got) != 3 || got[0].Type != EventQueued || got[0].Recipient != "b@x.test" || got[0].Stream != "billing" ||
		got[1].Reply != "250 2.0.0 ok" || got[1].EnhancedCode != "2.0.0" || got[1].RemoteMTA != "mx.x.test" || got[1].TLS != "TLSv1.3" ||
		got[2].From != "other@example.org" || got[2].Recipient != "app@example.org" || got[2].BounceQueueID != "18ECAF2DCCF80C22C6B0" {
		t.Fatalf("events = %+v", got)
	}
	for _, ev := range got {
		if ev.QueueID != env.ID || ev.MessageID != env.MessageID {
			t.Errorf("event %s lost its message: %+v", ev.ID, ev)
		}
	}
}

// TestPruneKeepsSharedEventsWhole: however small its steps, Prune never
// leaves an event whose message's record it removed, and reads in
// between see every event that remains.
func TestPruneKeepsSharedEventsWhole(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	for i := range 5 {
		id := enqueue(t, s, []byte("x\r\n"), "a@x.test", "b@x.test")
		c.Advance(time.Second)
		if _, err := s.Record(id, []Outcome{{Address: "a@x.test", Status: StatusDelivered, Reply: "250 ok"},
			{Address: "b@x.test", Status: StatusBounced, Reply: "550 5.1.1 no"}},
			Notice{Envelope: Envelope{Recipients: []Recipient{{Address: "sender@example.org"}}}, Body: []byte("r\r\n")}); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Duration(i+1) * time.Minute)
	}
	if n := len(allEvents(t, s, "")); n != 5*5 {
		t.Fatalf("%d events, want 25 (5 messages: 2 queued, 2 outcomes, a dsn_sent)", n)
	}
	before := c.Now().Add(-9*time.Minute - 5*time.Second) // between the third and fourth message
	for {
		n, err := s.History().Prune(before, 1)
		if err != nil {
			t.Fatal(err)
		}
		err = s.view(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketEvents)
			l := historyLookup{b: b, dict: s.dictOf(tx)}
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if len(k) == 8 {
					if _, err := decodeStored(k, v, &l); err != nil {
						t.Errorf("event %x unreadable after a prune step: %v", k, err)
					}
				}
			}
			return nil
		})
		if err != nil || n == 0 {
			break
		}
	}
	hist, err := s.History().List(HistoryQuery{})
	if err != nil || len(hist) != 2 {
		t.Fatalf("history after pruning = %d messages, %v; want the 2 newest", len(hist), err)
	}
	left := allEvents(t, s, "")
	if len(left) != 2*5 {
		t.Errorf("%d events left, want the 2 newest messages' 10", len(left))
	}
	for _, ev := range left {
		if ev.Time.Before(before) {
			t.Errorf("event %+v older than the cut survived", ev)
		}
	}
}

func FuzzDecodeSharedEvent(f *testing.F) {
	histKey, hist, evs, _ := sharedSample()
	for seq, v := range evs {
		f.Add(v, seq)
	}
	f.Add([]byte{eventShared, 0, 0, 0, 0, 0, 0}, uint64(1))
	f.Fuzz(func(t *testing.T, v []byte, seq uint64) {
		f, err := decodeSharedHistory(histKey, hist, sampleLookup)
		if err != nil {
			t.Fatal(err)
		}
		l := historyLookup{seen: map[string]*Envelope{string(histKey): &f.Envelope}}
		ev, err := decodeSharedEvent(v, seq, &l)
		if err != nil {
			return
		}
		if ev.QueueID != f.ID || !ev.Type.Valid() {
			t.Fatalf("decoded %+v from %q", ev, v)
		}
	})
}

func FuzzDecodeSharedHistory(f *testing.F) {
	histKey, hist, _, _ := sharedSample()
	f.Add(histKey, hist)
	f.Add(histKey, []byte{historyShared, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, k, v []byte) {
		got, err := decodeSharedHistory(k, v, sampleLookup)
		if err != nil {
			return
		}
		again := appendSharedHistory(nil, &got.Envelope, got.Finished, sampleIntern, got.Late...)
		back, err := decodeSharedHistory(k, again, sampleLookup)
		if err != nil || !reflect.DeepEqual(back, got) || !bytes.Equal(again, appendSharedHistory(nil, &back.Envelope, back.Finished, sampleIntern, back.Late...)) {
			t.Fatalf("re-encoded history differs: %+v %v", back, err)
		}
		// What events read of it agrees with the whole record.
		ef, err := sharedEventFields(k, v, sampleLookup)
		if err != nil || ef.ID != got.ID || ef.MessageID != got.MessageID || ef.From != got.From ||
			ef.Sender.Stream != got.Sender.Stream || len(ef.Recipients) != len(got.Recipients) {
			t.Fatalf("event fields %+v, %v; record %+v", ef, err, got)
		}
		for i, r := range ef.Recipients {
			g := got.Recipients[i]
			if r.Address != g.Address || r.LastReply != g.LastReply || r.RemoteMTA != g.RemoteMTA {
				t.Fatalf("recipient %d: event fields %+v, record %+v", i, r, g)
			}
		}
	})
}

// TestDictionaryAcrossRestart: the strings finished messages share are
// read back after a restart, and entries added after it do not take the
// place of those before.
func TestDictionaryAcrossRestart(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "queue.db")
	finish := func(s *Store, from, helo string) {
		t.Helper()
		d := s.NewDraft()
		d.Write([]byte("x\r\n"))
		if err := d.Commit(Envelope{From: from, Helo: helo, Recipients: []Recipient{{Address: "a@x.test"}}}); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Second)
		if _, err := s.Record(d.ID(), []Outcome{{Address: "a@x.test", Status: StatusDelivered, Reply: "250 ok", RemoteMTA: "mx.x.test.example"}}); err != nil {
			t.Fatal(err)
		}
	}
	s := openAt(t, path, testOpts(c))
	for range 3 {
		finish(s, "app@example.org", "app1.example.org")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, testOpts(c))
	for range 3 {
		finish(s, "news@example.org", "app2.example.org")
	}
	hist, err := s.History().List(HistoryQuery{})
	if err != nil || len(hist) != 6 {
		t.Fatalf("history: %d messages, %v", len(hist), err)
	}
	for i, f := range hist {
		from, helo := "news@example.org", "app2.example.org"
		if i >= 3 {
			from, helo = "app@example.org", "app1.example.org"
		}
		if f.From != from || f.Helo != helo || f.Recipients[0].RemoteMTA != "mx.x.test.example" || f.Recipients[0].Address != "a@x.test" {
			t.Errorf("message %d: from %q helo %q mta %q to %q", i, f.From, f.Helo, f.Recipients[0].RemoteMTA, f.Recipients[0].Address)
		}
	}
	var entries int
	s.view(func(tx *bolt.Tx) error { entries = tx.Bucket(bucketStrings).Stats().KeyN; return nil })
	if entries != 6 {
		t.Errorf("dictionary has %d entries, want 6 (two senders, two HELOs, one MX, one recipient domain)", entries)
	}
}
