package queue

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/identity"
)

func FuzzDecodeEnvelope(f *testing.F) {
	good, _ := encodeEnvelope(sampleEnvelope())
	goodV2, _ := encodeV2(sampleEnvelope())
	f.Add(good)
	f.Add(goodV2)
	f.Add([]byte{recordV3, 0, 0, 0, 0})
	f.Add([]byte{})
	f.Add([]byte{0x01})
	f.Add([]byte{0x02, '{', '}'})
	f.Add([]byte("\x01{\"id\":\"X\",\"recipients\":[{\"address\":\"a\",\"status\":\"bogus\"}]}"))
	f.Add([]byte("\x01{\"id\":\"X\",\"recipients\":null}"))
	f.Add([]byte("\x01{\"id\":\"X\",\"size\":-1,\"recipients\":[{\"address\":\"a\",\"status\":\"queued\"}]}"))
	f.Add([]byte("\x01{\"id\":\"X\",\"created\":\"not a time\",\"recipients\":[{\"address\":\"a\",\"status\":\"queued\"}]}"))
	// Version 1 (no checksum) records of older files, and records whose
	// checksum does not match.
	f.Add(append([]byte{recordV1}, goodV2[5:]...))
	for _, rec := range [][]byte{good, goodV2} {
		bad := bytes.Clone(rec)
		bad[len(bad)-2] ^= 1
		f.Add(bad)
	}
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
			t.Fatalf("round trip changed the record:\n%q\n%q", again, again2)
		}
	})
}

// sampleEnvelope has every field set.
func sampleEnvelope() *Envelope {
	return &Envelope{
		ID: "1828AC06863380009DD2", From: "a@example.org", RET: "HDRS", EnvID: "x",
		Recipients: []Recipient{
			{Address: "b@example.net", ORCPT: "rfc822;b@example.net", Notify: []string{"FAILURE", "DELAY"},
				Status: StatusDeferred, Attempts: 2, NextAttempt: time.Unix(1700000000, 5).UTC(),
				LastAttempt: time.Unix(1699999990, 0).UTC(), LastReply: "451 4.7.1 later",
				RemoteMTA: "mx.example.net", Warned: true, Report: ReportDelayed},
			{Address: "c@example.net", Status: StatusBounced, Report: ReportFailed},
		},
		SMTPUTF8: true, Body: "8BITMIME", Sender: identity.Sender{Stream: "bulk", Credential: identity.Credential{Kind: identity.User, Name: "app"}}, ClientAddr: "192.0.2.1", Helo: "client.example",
		Created: time.Unix(1700000000, 0).UTC(), Size: 1234, Held: true, Release: time.Unix(1700086400, 7).UTC(),
		Prefix: "DKIM-Signature: v=1\r\n", MessageID: "<m@example.org>", Subject: "héllo", Events: 300,
		TLS: true, DKIM: "example.org/sel1 example.org/ed1",
	}
}

// TestEnvelopeRecordFormats: every write is the binary version 3 unless a
// time does not fit in Unix nanoseconds, and files written with the JSON
// version 2 still read as the same envelope.
func TestEnvelopeRecordFormats(t *testing.T) {
	want := sampleEnvelope()
	v3, err := encodeEnvelope(want)
	if err != nil || v3[0] != recordV3 {
		t.Fatalf("encodeEnvelope: version %d, %v; want 3", v3[0], err)
	}
	v2, _ := encodeV2(want)
	for name, rec := range map[string][]byte{"v3": v3, "v2": v2, "v1": append([]byte{recordV1}, v2[5:]...)} {
		got, err := decodeEnvelope(rec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s decodes to\n%+v\nwant\n%+v", name, got, want)
		}
	}
	if len(v3) >= len(v2) {
		t.Errorf("binary record %d bytes, JSON %d: expected smaller", len(v3), len(v2))
	}
	far := sampleEnvelope()
	far.Recipients[0].NextAttempt = time.Date(2400, 1, 1, 0, 0, 0, 0, time.UTC)
	rec, _ := encodeEnvelope(far)
	if rec[0] != recordV2 {
		t.Fatalf("a time past 2262 went into version %d, want the JSON version 2", rec[0])
	}
	if got, err := decodeEnvelope(rec); err != nil || !got.Recipients[0].NextAttempt.Equal(far.Recipients[0].NextAttempt) {
		t.Errorf("far-future envelope: %v, %v", got, err)
	}
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

// TestBinaryCodecCoversEveryField fails when Envelope or Recipient gains a
// field: the binary form (appendFields, histReader) must learn it too, or
// the field would silently not survive a write.
func TestBinaryCodecCoversEveryField(t *testing.T) {
	if n := reflect.TypeOf(Envelope{}).NumField(); n != 20 {
		t.Errorf("Envelope has %d fields, the binary codec knows 20: add the new one to appendFields and histReader.envelope, and to sampleEnvelope", n)
	}
	if n := reflect.TypeOf(identity.Sender{}).NumField(); n != 3 {
		t.Errorf("identity.Sender has %d fields, the binary codec knows 3: add the new one to senderSlot and readSenderSlot", n)
	}
	if n := reflect.TypeOf(identity.Credential{}).NumField(); n != 2 {
		t.Errorf("identity.Credential has %d fields, the binary codec knows 2: add the new one to senderSlot and readSenderSlot", n)
	}
	if n := reflect.TypeOf(Recipient{}).NumField(); n != 11 {
		t.Errorf("Recipient has %d fields, the binary codec knows 11: add the new one to appendRecipient and histReader.recipient, and to sampleEnvelope", n)
	}
}

// A message without a stream (every message before streams) is stored
// byte for byte as before, and one with a stream reads back with it.
func TestStreamStoredOnlyWhenSet(t *testing.T) {
	env := sampleEnvelope()
	env.Sender.Stream = ""
	without, err := encodeEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	if without[5+len(env.ID)+1+len(env.Prefix)+1]&histStream != 0 {
		t.Fatal("stream flag set without a stream")
	}
	env.Sender.Stream = "transactional"
	with, err := encodeEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	if len(with) != len(without)+1+len("transactional") {
		t.Errorf("a stream adds %d bytes, want %d", len(with)-len(without), 1+len("transactional"))
	}
	got, err := decodeEnvelope(with)
	if err != nil || got.Sender.Stream != "transactional" {
		t.Fatalf("decoded %+v, %v", got, err)
	}
}
