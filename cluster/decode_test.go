package cluster

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/internal/waitfor"
)

// Entries read back from Redis are whatever another node (or anyone with
// access to Redis) wrote: decoding never panics, and what one node writes
// every other reads back the same.
func FuzzDecodeEntry(f *testing.F) {
	e := entry{Suspension: shaping.Suspension{Scope: shaping.Scope{Kind: shaping.ScopeProvider, Name: "google"},
		Action: shaping.ActionSuspend, Rule: "rules[0]", Cause: "421 4.7.28 slow down", Since: start, Until: start.Add(time.Hour)}, ID: "0123abcd"}
	b, _ := json.Marshal(e)
	f.Add(string(b), start.Add(time.Hour).UnixMicro())
	f.Add(`{"Scope":"planet:earth"}`, int64(0))
	f.Add(`{"Scope":"domain:x","Action":"bounce","Since":"not a time"}`, int64(-1))
	f.Add(`null`, int64(1<<62))
	f.Fuzz(func(t *testing.T, data string, until int64) {
		got, err := decodeEntry(data, until)
		if err != nil {
			return
		}
		again, err := json.Marshal(got)
		if err != nil {
			return // e.g. a year out of JSON's range: not written by a node
		}
		back, err := decodeEntry(string(again), until)
		if err != nil || back.Scope != got.Scope || back.Action != got.Action || back.ID != got.ID || !back.Until.Equal(got.Until) {
			t.Errorf("%q read back as %+v, %v; want %+v", again, back, err, got)
		}
	})
}

// Junk in Redis under the suspensions' keys is ignored: the nodes keep
// sharing and applying the real entries.
func TestJunkEntryIgnored(t *testing.T) {
	r := startRedis(t)
	junk := Prefix + "sus:domain:junk.example|suspend"
	for _, cmd := range [][]string{{"HSET", junk, "until", "99999999999999", "data", "not-json"}, {"SADD", Prefix + "sus", "domain:junk.example|suspend"}} {
		if got, err := r.probe(cmd...); err != nil || !strings.HasPrefix(got, ":") {
			t.Fatalf("%v: %q, %v", cmd, got, err)
		}
	}
	a, _ := newNode(t, r, "a", nil)
	b, _ := newNode(t, r, "b", nil)
	sc := shaping.Scope{Kind: shaping.ScopeDomain, Name: "real.example"}
	a.Put(start, suspension(sc, shaping.ActionSuspend, time.Hour))
	if !waitfor.Within(time.Second, func() bool { return len(b.Active(start, []string{sc.String()})) == 1 }) {
		t.Fatal("b: the real suspension did not arrive next to the junk")
	}
	if !b.RedisUp() || len(b.List(start)) != 1 {
		t.Errorf("b: up %v, lists %+v", b.RedisUp(), b.List(start))
	}
}
