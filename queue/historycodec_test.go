package queue

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"reflect"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/identity"
)

func historyKey(at time.Time, id string) []byte {
	return append(binary.BigEndian.AppendUint64(nil, unixNanos(at)), id...)
}

func sampleFinished() Finished {
	at := time.Date(2026, 11, 30, 12, 0, 0, 123_456_789, time.UTC)
	return Finished{Finished: at.Add(time.Minute), Envelope: Envelope{
		ID: "18ECAF2DCCF80C22C6A8", From: "app@example.org", RET: "HDRS", EnvID: "env-1", SMTPUTF8: true,
		Body: "8BITMIME", Sender: identity.Sender{Credential: identity.Credential{Name: "app"}}, ClientAddr: "127.0.0.1", Helo: "app.example.org", Created: at,
		Size: 4711, Held: true, MessageID: "<m@example.org>", Subject: "Grüße",
		Recipients: []Recipient{
			{Address: "bob@x.test", ORCPT: "rfc822;bob@x.test", Notify: []string{"SUCCESS", "FAILURE"},
				Status: StatusDelivered, Attempts: 3, LastAttempt: at.Add(time.Second), LastReply: "250 2.0.0 ok",
				RemoteMTA: "mx.x.test", Warned: true},
			{Address: "eve@y.test", Status: StatusBounced, Attempts: 1, NextAttempt: at.Add(time.Hour),
				LastReply: "550 5.1.1 no such user"},
		},
	}}
}

// TestHistoryRecordRoundTrip: the binary record keeps every field the JSON
// one kept, takes the ID and finish time from the key, and is smaller.
func TestHistoryRecordRoundTrip(t *testing.T) {
	for _, f := range []Finished{sampleFinished(), {Finished: time.Unix(1764500000, 0).UTC(), Envelope: Envelope{ID: "x"}}} {
		rec := appendHistory(nil, &f.Envelope)
		got, err := decodeHistory(historyKey(f.Finished, f.ID), rec)
		if err != nil || !reflect.DeepEqual(got, f) {
			t.Errorf("round trip:\n got %+v %v\nwant %+v", got, err, f)
		}
		js, _ := json.Marshal(&f)
		if len(rec) >= len(js)/2 {
			t.Errorf("binary record %d bytes, JSON %d: not compact", len(rec), len(js))
		}
		for i := range rec {
			rec[i] ^= 4
			if _, err := decodeHistory(historyKey(f.Finished, f.ID), rec); err == nil {
				t.Errorf("a flipped bit at %d went unnoticed", i)
			}
			rec[i] ^= 4
		}
	}
}

// TestHistoryJSONRecordStillRead: files written before the binary format
// hold CRC-32C + JSON(Finished); they are still read.
func TestHistoryJSONRecordStillRead(t *testing.T) {
	f := sampleFinished()
	js, _ := json.Marshal(&f)
	rec := append(binary.BigEndian.AppendUint32(nil, crc32.Checksum(js, castagnoli)), js...)
	got, err := decodeHistory(historyKey(f.Finished, f.ID), rec)
	if err != nil || !reflect.DeepEqual(got, f) {
		t.Errorf("old record:\n got %+v %v\nwant %+v", got, err, f)
	}
	rec[len(rec)-2] ^= 1
	if _, err := decodeHistory(historyKey(f.Finished, f.ID), rec); err == nil {
		t.Error("a damaged JSON record was read")
	}
}

// FuzzDecodeHistory: whatever bytes a damaged file holds, decoding fails
// cleanly or gives a message that encodes back to the same one.
func FuzzDecodeHistory(f *testing.F) {
	s := sampleFinished()
	key := historyKey(s.Finished, s.ID)
	f.Add(key, appendHistory(nil, &s.Envelope))
	js, _ := json.Marshal(&s)
	f.Add(key, append(binary.BigEndian.AppendUint32(nil, crc32.Checksum(js, castagnoli)), js...))
	f.Add([]byte("12345678"), []byte{1, 0, 0, 0, 0, 0})
	f.Add(key, appendHistory(nil, &s.Envelope, Late{Recipient: "a@b.example", Type: EventComplained, FeedbackType: "abuse", Time: s.Finished}))
	f.Fuzz(func(t *testing.T, k, v []byte) {
		got, err := decodeHistory(k, v)
		if err != nil || len(k) < 8 || v[0] != historyFormat {
			return
		}
		back, err := decodeHistory(k, appendHistory(nil, &got.Envelope, got.Late...))
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Fatalf("re-encoded record differs:\n got %+v %v\nwant %+v", back, err, got)
		}
	})
}

// How a message was accepted (over TLS, signed with which keys) stays in
// its history once it finished, with or without the dictionary.
func TestFinishedKeepsHowItWasAccepted(t *testing.T) {
	_, _, _, env := sharedSample()
	env.TLS, env.DKIM = true, "example.org/sel1 example.org/ed1"
	packed, _ := packID(env.ID)
	key := sharedHistoryKey(5, packed)
	for name, in := range map[string]interner{"inline": nil, "dictionary": func(string) (uint32, bool) { return 1, true }} {
		rec := appendSharedHistory(nil, env, env.Created.Add(time.Minute), in)
		f, err := decodeSharedHistory(key, rec, func(uint32) (string, bool) { return env.DKIM, true })
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !f.TLS || f.DKIM != env.DKIM {
			t.Errorf("%s: TLS %v, DKIM %q; want true, %q", name, f.TLS, f.DKIM, env.DKIM)
		}
	}
}

// One finished message is found by its queue ID among others.
func TestHistoryByQueueID(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	var ids []string
	for range 5 {
		id := enqueue(t, s, []byte("x\r\n"), "a@example.net")
		c.Advance(time.Second)
		if _, err := s.Record(id, []Outcome{{Address: "a@example.net", Status: StatusDelivered, Reply: "250 ok"}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	waiting := enqueue(t, s, []byte("x\r\n"), "b@example.net")
	for _, id := range []string{ids[0], ids[2], ids[4]} {
		if h, err := s.History().List(HistoryQuery{ID: id}); err != nil || len(h) != 1 || h[0].ID != id {
			t.Errorf("History(ID %s) = %+v, %v", id, h, err)
		}
	}
	if h, err := s.History().List(HistoryQuery{ID: waiting}); err != nil || len(h) != 0 {
		t.Errorf("a waiting message has history: %+v, %v", h, err)
	}
}
