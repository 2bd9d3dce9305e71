package queue

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Scoped entries are keyed scope NUL address, global ones by the address
// alone as before scopes: an entry written by an older relayq (no scope
// in its JSON) reads as global, and a scope's entry for the same address
// sits beside it.
func TestSuppressionScopesKeyed(t *testing.T) {
	s, _ := openTemp(t, testOpts(newClock()))
	old, _ := json.Marshal(map[string]any{"address": "bob@x.test", "since": "2026-01-02T03:04:05Z", "source": "auto"})
	rec := append(binary.BigEndian.AppendUint32(nil, crc32.Checksum(old, castagnoli)), old...)
	if err := s.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketSuppressions)
		if err != nil {
			return err
		}
		return b.Put([]byte("bob@x.test"), rec)
	}); err != nil {
		t.Fatal(err)
	}
	s.suppressing.Store(true)
	if err := s.Suppressions().Add(Suppression{Address: "Bob@X.test", Scope: "tenant:a"}); err != nil {
		t.Fatal(err)
	}
	g, ok, err := s.Suppressions().Get("bob@x.test")
	if !ok || err != nil || g.Scope != "" || g.Source != "auto" {
		t.Fatalf("entry before scopes: %+v %v %v", g, ok, err)
	}
	sc, ok, _ := s.Suppressions().Get(ScopedSuppressionKey("tenant:a", "BOB@x.test"))
	if !ok || sc.Scope != "tenant:a" || sc.Address != "bob@x.test" {
		t.Fatalf("scoped entry: %+v %v", sc, ok)
	}
	if _, ok, _ := s.Suppressions().Get(ScopedSuppressionKey("tenant:b", "bob@x.test")); ok {
		t.Fatal("another scope sees a's entry")
	}
	all, _ := s.Suppressions().List()
	if len(all) != 2 {
		t.Fatalf("list %+v", all)
	}
	if found, _ := s.Suppressions().Remove(ScopedSuppressionKey("tenant:a", "bob@x.test")); !found {
		t.Fatal("scoped remove")
	}
	if _, ok, _ := s.Suppressions().Get("bob@x.test"); !ok {
		t.Fatal("removing a's entry removed the global one")
	}
}

// FuzzSuppressionKey: whatever a scope and an address hold, the global
// key is the address key of files before scopes, a scoped key starts with
// its scope and a NUL byte, and an entry's Key is the key it is stored
// under.
func FuzzSuppressionKey(f *testing.F) {
	f.Add("tenant:a", "Bob@X.test")
	f.Add("", "a@b")
	f.Fuzz(func(t *testing.T, scope, addr string) {
		k := ScopedSuppressionKey(scope, addr)
		if (Suppression{Address: addr, Scope: scope}).Key() != k {
			t.Fatal("Key differs from ScopedSuppressionKey")
		}
		if scope == "" && k != SuppressionKey(addr) {
			t.Fatal("a global key is not the address key")
		}
		if scope != "" && !bytes.HasPrefix([]byte(k), []byte(scope+"\x00")) {
			t.Fatal("a scoped key does not start with its scope")
		}
	})
}
