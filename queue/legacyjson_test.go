package queue

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/identity"
)

// Records written before the sender was one value held it flat, as
// auth_user and stream: version-1 envelopes and JSON history records
// still read with it.
func TestOldJSONSenderStillRead(t *testing.T) {
	want := identity.Sender{Stream: "bulk", Credential: identity.Credential{Name: "app"}}
	js := `{"id":"18ECAF2DCCF80C22C6A8","from":"a@example.org","recipients":[{"address":"b@x.test","status":"queued"}],` +
		`"auth_user":"app","stream":"bulk","created":"2026-11-30T12:00:00Z","size":10}`
	env, err := decodeEnvelope(append([]byte{recordV1}, js...))
	if err != nil || env.Sender != want {
		t.Errorf("version-1 envelope: sender %+v, %v; want %+v", env, err, want)
	}
	hist := []byte(js[:len(js)-1] + `,"finished":"2026-11-30T12:01:00Z"}`)
	rec := append(binary.BigEndian.AppendUint32(nil, crc32.Checksum(hist, castagnoli)), hist...)
	f, err := decodeHistory(historyKey(time.Date(2026, 11, 30, 12, 1, 0, 0, time.UTC), "18ECAF2DCCF80C22C6A8"), rec)
	if err != nil || f.Sender != want {
		t.Errorf("JSON history record: sender %+v, %v; want %+v", f.Sender, err, want)
	}
}

// Every sender survives the binary forms: envelope records, history
// records and the finished form in the events tree.
func TestSenderSlotRoundTrips(t *testing.T) {
	for _, s := range []identity.Sender{
		{},
		{Stream: "bulk"},
		{Credential: identity.Credential{Name: "old"}},
		{Credential: identity.Credential{Kind: identity.User, Name: "billing-smtp"}},
		{Tenant: "billing", Stream: "tx", Credential: identity.Credential{Kind: identity.APIKey, Name: "billing"}},
		{Tenant: "shop"},
	} {
		var got identity.Sender
		readSenderSlot(&got, senderSlot(s))
		got.Stream = s.Stream
		if got != s {
			t.Errorf("slot %q read back %+v, want %+v", senderSlot(s), got, s)
		}
	}
	if senderSlot(identity.Sender{Credential: identity.Credential{Name: "app"}}) != "app" {
		t.Error("a name of unknown kind without a tenant is not stored as before")
	}
}
