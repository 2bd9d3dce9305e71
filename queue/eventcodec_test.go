package queue

import (
	"encoding/json"
	"reflect"
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
		rec, err := encodeEvent(&ev)
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
	if _, err := encodeEvent(&Event{Type: "sent"}); err == nil {
		t.Error("unknown type encoded")
	}
}

// FuzzDecodeEvent: whatever bytes a damaged file holds, decoding fails
// cleanly or gives an event that encodes back to the same bytes.
func FuzzDecodeEvent(f *testing.F) {
	ev := Event{Type: EventDelivered, Time: time.UnixMilli(1764500000000).UTC(), QueueID: "18ECAF2DCCF80C22C6A8", Reply: "250 2.0.0 ok", EnhancedCode: "2.0.0"}
	rec, _ := encodeEvent(&ev)
	f.Add(rec)
	f.Add([]byte{1, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := decodeEvent(b)
		if err != nil {
			return
		}
		again, err := encodeEvent(&ev)
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
