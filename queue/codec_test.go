package queue

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func FuzzDecodeEnvelope(f *testing.F) {
	good, _ := encodeEnvelope(&Envelope{
		ID: "1828AC06863380009DD2", From: "a@example.org", RET: "HDRS", EnvID: "x",
		Recipients: []Recipient{
			{Address: "b@example.net", Notify: []string{"FAILURE"}, Status: StatusDeferred, Attempts: 2,
				NextAttempt: time.Unix(1700000000, 5).UTC(), LastReply: "451 4.7.1 later"},
			{Address: "c@example.net", Status: StatusDelivered},
		},
		Created: time.Unix(1700000000, 0).UTC(), Size: 1234, Held: true,
	})
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{0x01})
	f.Add([]byte{0x02, '{', '}'})
	f.Add([]byte("\x01{\"id\":\"X\",\"recipients\":[{\"address\":\"a\",\"status\":\"bogus\"}]}"))
	f.Add([]byte("\x01{\"id\":\"X\",\"recipients\":null}"))
	f.Add([]byte("\x01{\"id\":\"X\",\"size\":-1,\"recipients\":[{\"address\":\"a\",\"status\":\"queued\"}]}"))
	f.Add([]byte("\x01{\"id\":\"X\",\"created\":\"not a time\",\"recipients\":[{\"address\":\"a\",\"status\":\"queued\"}]}"))
	// Version 1 (no checksum) records of older files, and a version 2
	// record whose checksum does not match.
	f.Add(append([]byte{recordV1}, good[5:]...))
	bad := bytes.Clone(good)
	bad[len(bad)-2] ^= 1
	f.Add(bad)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseLoose(b) // the quarantine's best-effort reading
		env, err := decodeEnvelope(b)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("error %v does not wrap ErrDamaged", err)
			}
			return
		}
		if err := validate(env); err != nil {
			t.Fatalf("decoded an invalid envelope: %v", err)
		}
		// What decodes must survive a round trip unchanged.
		again, err := encodeEnvelope(env)
		if err != nil {
			t.Fatal(err)
		}
		env2, err := decodeEnvelope(again)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		again2, _ := encodeEnvelope(env2)
		if !bytes.Equal(again, again2) {
			t.Fatalf("round trip changed the record:\n%s\n%s", again, again2)
		}
	})
}

func TestScheduleKeyOrder(t *testing.T) {
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	env := func(id string, held bool, rs ...Recipient) *Envelope {
		return &Envelope{ID: id, Held: held, Recipients: rs}
	}
	early := env("B", false, Recipient{Address: "x", Status: StatusDeferred, NextAttempt: base.Add(time.Hour)},
		Recipient{Address: "y", Status: StatusQueued, NextAttempt: base})
	late := env("A", false, Recipient{Address: "x", Status: StatusDeferred, NextAttempt: base.Add(time.Minute)},
		Recipient{Address: "y", Status: StatusDelivered})
	if k1, k2 := scheduleKey(early), scheduleKey(late); bytes.Compare(k1, k2) >= 0 {
		t.Error("earliest non-final NextAttempt must decide the order, not the ID")
	}
	if at, id, ok := parseScheduleKey(scheduleKey(early)); !ok || id != "B" || !at.Equal(base) {
		t.Errorf("parse = %v %q %v", at, id, ok)
	}
	if scheduleKey(env("H", true, Recipient{Address: "x", Status: StatusQueued})) != nil {
		t.Error("held message has a schedule key")
	}
	if scheduleKey(env("D", false, Recipient{Address: "x", Status: StatusBounced})) != nil {
		t.Error("finished message has a schedule key")
	}
}
