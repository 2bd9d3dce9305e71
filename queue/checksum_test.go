package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// flipIn flips one bit of the stored value under path (bucket names, then
// the key) in the closed file: a disk error inside a record.
func flipIn(t *testing.T, file string, at int, path ...[]byte) {
	t.Helper()
	rawUpdate(t, file, func(tx *bolt.Tx) error {
		b := tx.Bucket(path[0])
		for _, p := range path[1 : len(path)-1] {
			b = b.Bucket(p)
		}
		key := path[len(path)-1]
		v := bytes.Clone(b.Get(key))
		if at < 0 {
			at += len(v)
		}
		v[at] ^= 0x20
		return b.Put(key, v)
	})
}

// bodyFails reads id's body and reports the error, which must come before
// any byte of the damaged chunk.
func bodyFails(t *testing.T, s *Store, id string) error {
	t.Helper()
	rc, err := s.Body(id)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.ReadAll(rc)
	return err
}

// TestDamagedBodyIsQuarantinedNotRead: a flipped bit in a small body, in a
// chunk of a large one, or in an envelope is caught on read; the message
// leaves the live queue for the quarantine and is listed there.
func TestDamagedBodyIsQuarantinedNotRead(t *testing.T) {
	cases := []struct {
		name string
		size int
		path func(id string) [][]byte
		at   int
	}{
		{"small body", 100, func(id string) [][]byte { return [][]byte{bucketSmallBodiesSum, []byte(id)} }, -3},
		{"second chunk", 3 << 20, func(id string) [][]byte {
			return [][]byte{bucketBodies, []byte(id), chunkKey(1), chunkDataKey}
		}, 5000},
		{"envelope", 100, func(id string) [][]byte { return [][]byte{bucketEnvelopes, []byte(id)} }, 12},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := testOpts(newClock())
			s, path := openTemp(t, o)
			other := enqueue(t, s, []byte("innocent bystander"), "b@example.net")
			id := enqueue(t, s, pattern(tc.size), "a@example.net")
			if got := readBody(t, s, id); !bytes.Equal(got, pattern(tc.size)) {
				t.Fatal("body differs before any damage")
			}
			s.Close()
			flipIn(t, path, tc.at, tc.path(id)...)
			s = openAt(t, path, o)

			err := bodyFails(t, s, id)
			if tc.name == "envelope" {
				// Open decodes every envelope: it was quarantined there.
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("reading the damaged message: %v, want ErrNotFound", err)
				}
			} else if !errors.Is(err, ErrDamaged) {
				t.Fatalf("reading the damaged message: %v, want ErrDamaged", err)
			}
			if _, err := s.Get(id); !errors.Is(err, ErrNotFound) {
				t.Errorf("after the damage was found, Get = %v, want ErrNotFound (quarantined)", err)
			}
			if due, _ := s.due(s.now().Add(1e12), 0, nil); len(due) != 1 || due[0] != other {
				t.Errorf("due after quarantine = %v, want only %s", due, other)
			}
			q, _, err := s.Quarantine().List("", 0)
			if err != nil || len(q) != 1 || q[0].ID != id || q[0].Reason == "" {
				t.Fatalf("ListQuarantined = %+v, %v; want %s with a reason", q, err, id)
			}
			st := s.Stats()
			if st.Messages != 1 || st.Quarantined != 1 || st.QuarantinedSinceOpen != 1 {
				t.Errorf("stats = %+v, want 1 message, 1 quarantined", st)
			}
			if got := readBody(t, s, other); string(got) != "innocent bystander" {
				t.Errorf("other message's body = %q", got)
			}
			if err := s.Quarantine().Delete(id); err != nil {
				t.Fatal(err)
			}
			if err := s.Quarantine().Delete(id); !errors.Is(err, ErrNotFound) {
				t.Errorf("second DeleteQuarantined = %v, want ErrNotFound", err)
			}
			if q, _, _ := s.Quarantine().List("", 0); len(q) != 0 || s.Stats().Quarantined != 0 {
				t.Errorf("after DeleteQuarantined: %+v, stats %+v", q, s.Stats())
			}
		})
	}
}

// TestLegacyRecordsStayReadable: a file written before checksums (version-1
// envelopes, plain small bodies and chunks) is read as it is.
func TestLegacyRecordsStayReadable(t *testing.T) {
	o := testOpts(newClock())
	s, path := openTemp(t, o)
	s.Close()
	big := pattern(2<<20 + 17)
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		for i, body := range [][]byte{[]byte("old small body"), big} {
			id := []string{"18000000000000000001", "18000000000000000002"}[i]
			env := Envelope{ID: id, From: "a@example.org", Size: int64(len(body)),
				Recipients: []Recipient{{Address: "b@example.net", Status: StatusQueued}}}
			js, _ := json.Marshal(env)
			if err := tx.Bucket(bucketEnvelopes).Put([]byte(id), append([]byte{recordV1}, js...)); err != nil {
				return err
			}
			if i == 0 {
				if err := tx.Bucket(bucketSmallBodies).Put([]byte(id), body); err != nil {
					return err
				}
				continue
			}
			bb, err := tx.Bucket(bucketBodies).CreateBucket([]byte(id))
			if err != nil {
				return err
			}
			for c := uint32(0); len(body) > 0; c++ {
				n := min(len(body), 1<<20)
				cb, err := bb.CreateBucket(chunkKey(c))
				if err != nil {
					return err
				}
				if err := cb.Put(chunkValueKey, body[:n]); err != nil {
					return err
				}
				body = body[n:]
			}
		}
		return nil
	})
	s = openAt(t, path, o)
	if got := readBody(t, s, "18000000000000000001"); string(got) != "old small body" {
		t.Errorf("legacy small body = %q", got)
	}
	if got := readBody(t, s, "18000000000000000002"); !bytes.Equal(got, big) {
		t.Errorf("legacy chunked body differs (%d bytes)", len(got))
	}
	// A write re-encodes the envelope with a checksum; the body stays legacy.
	if err := s.Admin().Hold("18000000000000000002"); err != nil {
		t.Fatal(err)
	}
	if env, err := s.Get("18000000000000000002"); err != nil || !env.Held {
		t.Fatalf("Get after Hold = %+v, %v", env, err)
	}
	if q, _, _ := s.Quarantine().List("", 0); len(q) != 0 {
		t.Errorf("legacy records quarantined: %+v", q)
	}
}

func FuzzDecodeChunk(f *testing.F) {
	f.Add("18000000000000000001", uint32(0), encodeChunk("18000000000000000001", 0, []byte("body")))
	f.Add("X", uint32(3), []byte{1, 2, 3})
	f.Add("", uint32(0), []byte{})
	f.Fuzz(func(t *testing.T, id string, i uint32, v []byte) {
		data, err := decodeChunk(id, i, v)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("error %v does not wrap ErrDamaged", err)
			}
			return
		}
		if !bytes.Equal(encodeChunk(id, i, data), v) {
			t.Fatal("a chunk that verifies does not re-encode to itself")
		}
		if _, err := decodeChunk(id, i+1, v); err == nil && len(v) > 0 {
			// CRC-32C of different input could collide, but not for a
			// change of one index word with the same data: it is linear.
			t.Fatal("chunk verifies under another index")
		}
	})
}
