package queue

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// An async outcome keeps its "async" mark and feedback type through the
// compact record and the wire form, and older records (no such bits)
// still read as before.
func TestAsyncEventFieldsRoundTrip(t *testing.T) {
	ev := Event{Type: EventComplained, Time: time.UnixMilli(1764590400123).UTC(), QueueID: "18ECAF2DCCF80C22C6A8",
		Recipient: "annoyed@yahoo.com", Async: true, FeedbackType: "abuse"}
	rec, err := appendEvent(nil, &ev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeEvent(rec)
	if err != nil || got != ev {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, ev)
	}
	js := string(got.AppendJSON(nil))
	if !strings.Contains(js, `"async":true,"feedback_type":"abuse"`) {
		t.Errorf("wire form %s lacks the async fields", js)
	}
	std, _ := json.Marshal(eventWire{eventFields: (*eventFields)(&got), Time: got.Time.Format(eventTimeLayout)})
	if string(std) != js {
		t.Errorf("AppendJSON %s\nencoding/json %s", js, std)
	}
	plain := Event{Type: EventBounced, Recipient: "x@y.example", Reply: "550 5.1.1 no"}
	rec, _ = appendEvent(nil, &plain)
	if rec[5]&(kindAsync|kindMore) != 0 {
		t.Errorf("a synchronous event's record sets the async bits: %#x", rec[5])
	}
}
