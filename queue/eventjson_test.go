package queue

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// referenceEventJSON is the event's JSON through encoding/json, the form
// AppendJSON must reproduce byte for byte.
func referenceEventJSON(t testing.TB, e Event) []byte {
	t.Helper()
	w := struct {
		*eventFields
		Time        string `json:"time,omitempty"`
		NextAttempt string `json:"next_attempt,omitempty"`
	}{eventFields: (*eventFields)(&e)}
	if !e.Time.IsZero() {
		w.Time = e.Time.UTC().Format(eventTimeLayout)
	}
	if !e.NextAttempt.IsZero() {
		w.NextAttempt = e.NextAttempt.UTC().Format(eventTimeLayout)
	}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEventAppendJSONMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 30, 20, 1, 2, 345_678_901, time.FixedZone("X", 3600))
	for name, e := range map[string]Event{
		"minimal": {ID: "0000000000000001", Type: EventQueued},
		"delivered": {ID: "00000000000000a2", Type: EventDelivered, Time: at, QueueID: "Q1",
			MessageID: "<m1@example.org>", From: "a@example.org", Recipient: "b@example.net", Attempt: 3,
			Reply: "250 2.0.0 ok", EnhancedCode: "2.0.0", RemoteMTA: "mx.example.net", TLS: "TLSv1.3"},
		"deferred": {ID: "3", Type: EventDeferred, NextAttempt: at.Add(time.Minute), Reply: "451 4.7.1 \"try\" later\\now"},
		"escapes":  {ID: "4", Type: EventBounced, Reply: "550 5.1.1 <x> & y\r\n\t\x00\x1f\x7f \u2028\u2029 é \xff\xfe tail"},
		"dsn":      {ID: "5", Type: EventDSNSent, BounceQueueID: "B7", Attempt: -1},
	} {
		t.Run(name, func(t *testing.T) {
			got := e.AppendJSON(nil)
			if want := referenceEventJSON(t, e); !bytes.Equal(got, want) {
				t.Errorf("AppendJSON:\n got %s\nwant %s", got, want)
			}
			var back Event
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("the output does not parse: %v", err)
			}
		})
	}
}

func FuzzEventJSON(f *testing.F) {
	f.Add("id", "delivered", "<m@x>", "a@b", "250 ok", 3, int64(1_700_000_000_123_000_000))
	f.Add("", "", "\xff\u2028", "\x00", "<&>", 0, int64(0))
	f.Fuzz(func(t *testing.T, id, typ, msgid, rcpt, reply string, attempt int, nanos int64) {
		e := Event{ID: id, Type: EventType(typ), MessageID: msgid, Recipient: rcpt, Reply: reply,
			Attempt: attempt, TLS: reply, From: rcpt}
		if nanos > 0 {
			e.Time = time.Unix(0, nanos)
		}
		if got, want := e.AppendJSON(nil), referenceEventJSON(t, e); !bytes.Equal(got, want) {
			t.Errorf("AppendJSON:\n got %q\nwant %q", got, want)
		}
	})
}
