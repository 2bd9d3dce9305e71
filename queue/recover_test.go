package queue

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// rawUpdate edits the closed queue file with plain bbolt, as a crash or a
// disk fault might have left it.
func rawUpdate(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func TestOpenQuarantinesCorruptRecord(t *testing.T) {
	clock := newClock()
	o := testOpts(clock)
	s, path := openTemp(t, o)
	good := enqueue(t, s, []byte("good body"), "a@example.net")
	s.Close()

	const badID = "00000000000000010000"
	garbage := []byte{0x01, '{', '"', 'i', 'd', 0xff, 0x00}
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketEnvelopes).Put([]byte(badID), garbage); err != nil {
			return err
		}
		// Garbage in a schedule entry pointing at the bad record, too.
		k := append(make([]byte, 8), badID...)
		if err := tx.Bucket(bucketSchedule).Put(k, nil); err != nil {
			return err
		}
		b, err := tx.Bucket(bucketBodies).CreateBucket([]byte(badID))
		if err != nil {
			return err
		}
		return putChunk(b, badID, 0, []byte("bad body"))
	})

	var logs bytes.Buffer
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	s = openAt(t, path, o)
	if !strings.Contains(logs.String(), "quarantine") || !strings.Contains(logs.String(), badID) {
		t.Errorf("quarantine not logged: %s", logs.String())
	}
	if _, err := s.Get(badID); !errors.Is(err, ErrNotFound) {
		t.Errorf("corrupt record still visible: %v", err)
	}
	if got := readBody(t, s, good); string(got) != "good body" {
		t.Errorf("good message damaged: %q", got)
	}
	if ids, _ := s.due(clock.Now(), 0, nil); !slices.Equal(ids, []string{good}) {
		t.Errorf("Due = %v, want only the good message", ids)
	}
	if msgs, _, err := s.Admin().List(ListOptions{}); err != nil || len(msgs) != 1 {
		t.Errorf("List = %d msgs, %v", len(msgs), err)
	}
	if st := s.Stats(); st.Messages != 1 {
		t.Errorf("Stats.Messages = %d", st.Messages)
	}
	s.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketQuarantine).Get([]byte(badID)); !bytes.Equal(v, garbage) {
			t.Errorf("quarantined bytes = %q", v)
		}
		if tx.Bucket(bucketQuarantineBodies).Bucket([]byte(badID)) == nil {
			t.Error("body of quarantined record not kept")
		}
		return nil
	})
	// A second Open finds nothing more to do and still works.
	s.Close()
	logs.Reset()
	openAt(t, path, o)
	if strings.Contains(logs.String(), "quarantine") {
		t.Errorf("second Open quarantined again: %s", logs.String())
	}
}

func TestOpenRepairsScheduleIndex(t *testing.T) {
	clock := newClock()
	o := testOpts(clock)
	s, path := openTemp(t, o)
	a := enqueue(t, s, nil, "a@example.net")
	b := enqueue(t, s, nil, "b@example.net")
	s.Close()
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		sched := tx.Bucket(bucketSchedule)
		// Lose b's entry, add one for a message that does not exist.
		c := sched.Cursor()
		var bKey []byte
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if strings.HasSuffix(string(k), b) {
				bKey = bytes.Clone(k)
			}
		}
		if err := sched.Delete(bKey); err != nil {
			return err
		}
		// And stale ones before and after every real entry (the repair
		// walks both sides in key order).
		if err := sched.Put(append(make([]byte, 8), "FFFFFFFFFFFFFFFF0000"...), nil); err != nil {
			return err
		}
		return sched.Put(append(bytes.Repeat([]byte{0xff}, 8), "FFFFFFFFFFFFFFFF0001"...), nil)
	})
	s = openAt(t, path, o)
	if ids, _ := s.due(clock.Now(), 0, nil); !slices.Equal(ids, []string{a, b}) {
		t.Errorf("Due after repair = %v, want a, b", ids)
	}
	var left int
	s.view(func(tx *bolt.Tx) error { left = tx.Bucket(bucketSchedule).Stats().KeyN; return nil })
	if left != 2 {
		t.Errorf("schedule index has %d entries after repair, want 2 (a, b)", left)
	}
}

func TestSecondOpenFailsWithErrLocked(t *testing.T) {
	o := testOpts(newClock())
	o.LockTimeout = 50 * time.Millisecond
	_, path := openTemp(t, o)
	start := time.Now()
	s2, err := Open(path, o)
	if err == nil {
		s2.Close()
		t.Fatal("second Open succeeded")
	}
	if !errors.Is(err, ErrLocked) {
		t.Errorf("err = %v, want ErrLocked", err)
	}
	if want := "queue file " + path + " is in use by another relayq"; !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to say %q", err, want)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("second Open took %v", d)
	}
}
