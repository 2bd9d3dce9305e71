package queue

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEventRecordRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 123_000_000, time.UTC)
	for _, ev := range []Event{
		{Type: EventDelivered, Time: at, QueueID: "18ECAF2DCCF80C22C6A8", MessageID: "<a@b>", From: "a@b", Recipient: "c@d",
			Attempt: 3, Reply: "250 2.0.0 ok", EnhancedCode: "2.0.0", RemoteMTA: "mx.d", TLS: "TLSv1.3"},
		{Type: EventDeferred, Time: at, QueueID: "not-a-queue-id", Reply: "451 try later", EnhancedCode: "4.0.0", NextAttempt: at.Add(time.Hour)},
		{Type: EventSuppressed, Time: at, Recipient: "x@y"},
		{Type: EventDSNSent, Time: at, QueueID: "18ECAF2DCCF80C22C6A8", BounceQueueID: "18ECAF2DCCF80C22C6A9"},
	} {
		rec, err := appendEvent(nil, &ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeEvent(rec)
		if err != nil || !reflect.DeepEqual(got, ev) {
			t.Errorf("round trip:\n got %+v %v\nwant %+v", got, err, ev)
		}
		rec[len(rec)-1] ^= 1
		if _, err := decodeEvent(rec); err == nil {
			t.Error("a flipped bit went unnoticed")
		}
	}
	if _, err := appendEvent(nil, &Event{Type: "sent"}); err == nil {
		t.Error("unknown type encoded")
	}
}

// FuzzDecodeEvent: whatever bytes a damaged file holds, decoding fails
// cleanly or gives an event that encodes back to the same bytes.
func FuzzDecodeEvent(f *testing.F) {
	ev := Event{Type: EventDelivered, Time: time.UnixMilli(1764500000000).UTC(), QueueID: "18ECAF2DCCF80C22C6A8", Reply: "250 2.0.0 ok", EnhancedCode: "2.0.0"}
	rec, _ := appendEvent(nil, &ev)
	f.Add(rec)
	f.Add([]byte{1, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := decodeEvent(b)
		if err != nil {
			return
		}
		again, err := appendEvent(nil, &ev)
		if err != nil {
			t.Fatalf("decoded event does not encode: %v", err)
		}
		back, err := decodeEvent(again)
		if err != nil || !reflect.DeepEqual(back, ev) {
			t.Fatalf("re-encoded event differs: %+v %v", back, err)
		}
	})
}

func TestEventJSONRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 123_000_000, time.UTC)
	ev := Event{ID: "00000000000000ff", Type: EventDeferred, Time: at, QueueID: "Q", Attempt: 2, Reply: "451 4.7.1 later",
		EnhancedCode: "4.7.1", NextAttempt: at.Add(time.Minute)}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"event_id":"00000000000000ff","type":"deferred","queue_id":"Q","attempt":2,"reply":"451 4.7.1 later","enhanced_code":"4.7.1","time":"2026-11-30T12:00:00.123Z","next_attempt":"2026-11-30T12:01:00.123Z"}`
	if string(b) != want {
		t.Errorf("JSON\n got %s\nwant %s", b, want)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, ev) {
		t.Errorf("back: %+v %v", back, err)
	}
}

// enhancedCodeSplit is the first, allocating form of enhancedCode: the
// allocation-free one must agree with it on every reply.
func enhancedCodeSplit(reply string) string {
	f := strings.Fields(reply)
	for _, s := range f[:min(len(f), 2)] {
		if p := strings.Split(s, "."); len(p) == 3 && len(s) >= 5 && (s[0] == '2' || s[0] == '4' || s[0] == '5') {
			return s
		}
	}
	return ""
}

func TestEnhancedCodeAgreesWithFields(t *testing.T) {
	for _, r := range []string{"", " ", "250 2.0.0 OK", "550 5.1.1 <a@b>: no such user", "5.7.1 denied",
		"  \t421  4.4.2   timeout", "250 OK 2.0.0", "250 2.0", "250 2.0.0.0 x", "250 1.2.3", "250\u00a02.0.0 nbsp",
		"550 5.1.1", "x 5..1", "250 2.0.0\r\n", "\xff 2.0.0", "250 \xff.0.0"} {
		if got, want := enhancedCode(r), enhancedCodeSplit(r); got != want {
			t.Errorf("enhancedCode(%q) = %q, want %q", r, got, want)
		}
	}
}

func FuzzEnhancedCode(f *testing.F) {
	f.Add("550 5.1.1 <a@b>: no such user")
	f.Add(" \t250\u00a02.0.0 ok")
	f.Fuzz(func(t *testing.T, r string) {
		if got, want := enhancedCode(r), enhancedCodeSplit(r); got != want {
			t.Fatalf("enhancedCode(%q) = %q, want %q", r, got, want)
		}
	})
}

// An event carries its message's stream through the record and the wire
// form; one without a stream is stored as before streams.
func TestEventStreamRoundTrip(t *testing.T) {
	ev := Event{Type: EventQueued, QueueID: "18ECD0DD3A64807D4687", Recipient: "a@example.net", Time: time.UnixMilli(1700000000000).UTC()}
	plain, err := appendEvent(nil, &ev)
	if err != nil {
		t.Fatal(err)
	}
	ev.Stream = "bulk"
	withStream, err := appendEvent(nil, &ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(withStream) != len(plain)+2+len("bulk") || plain[5]&kindMore != 0 { // an empty feedback_type, then the stream
		t.Fatalf("records %x and %x", plain, withStream)
	}
	got, err := decodeEvent(withStream)
	if err != nil || got.Stream != "bulk" {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	if js := string(got.AppendJSON(nil)); !strings.Contains(js, `"stream":"bulk"`) {
		t.Fatalf("wire form %s", js)
	}
}
