package queue

import (
	"errors"
	"os"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A queue file names itself the same wherever it is mounted: the identity
// is written when the file is created, kept across opens, copied beside
// the file for peers, and given to a file written before identities on its
// first open.
func TestQueueIdentityIsWrittenOnceAndCopiedBeside(t *testing.T) {
	c := newClock()
	s, path := openTemp(t, testOpts(c))
	id := s.Owner().Identity()
	if !validIdentity(id) {
		t.Fatalf("identity %q", id)
	}
	if got, err := ReadIdentity(path); err != nil || got != id {
		t.Fatalf("ReadIdentity = %q, %v; want %q", got, err, id)
	}
	s.Close()
	s = openAt(t, path, testOpts(c))
	if s.Owner().Identity() != id {
		t.Fatalf("reopened identity %q, want %q", s.Owner().Identity(), id)
	}
	s.Close()

	// A file of an older relayq: no owner bucket, no copy beside it.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketOwner) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	os.Remove(IdentityFile(path))
	s = openAt(t, path, testOpts(c))
	if !validIdentity(s.Owner().Identity()) || s.Owner().Identity() == id {
		t.Fatalf("old file got identity %q (the removed one was %q)", s.Owner().Identity(), id)
	}
	if got, _ := ReadIdentity(path); got != s.Owner().Identity() {
		t.Fatalf("copy beside says %q, file %q", got, s.Owner().Identity())
	}
}

// Once the owner's fence refuses, nothing more reaches the file, even if
// the fence would pass again: a node that lost its lease may not trust a
// later answer of its own.
func TestFenceRefusalStopsEveryLaterWrite(t *testing.T) {
	c := newClock()
	var lost atomic.Bool
	o := testOpts(c)
	o.Fence = func() error {
		if lost.Load() {
			return errors.New("lease taken by node-b")
		}
		return nil
	}
	s, path := openTemp(t, o)
	if err := s.Owner().Fence(3); err != nil {
		t.Fatal(err)
	}
	kept := enqueue(t, s, []byte("kept\r\n"), "a@example.org")
	lost.Store(true)
	d := s.NewDraft()
	d.Write([]byte("refused\r\n"))
	if err := d.Commit(Envelope{From: "s@example.org", Recipients: []Recipient{{Address: "b@example.org"}}}); !errors.Is(err, ErrFenced) {
		t.Fatalf("commit after the lease was lost: %v, want ErrFenced", err)
	}
	lost.Store(false)
	if _, err := s.Claim(kept, []string{"a@example.org"}, c.Now(), c.Now()); !errors.Is(err, ErrFenced) {
		t.Fatalf("claim after a refusal: %v, want ErrFenced", err)
	}
	if !errors.Is(s.Err(), ErrFenced) {
		t.Fatalf("Err = %v", s.Err())
	}
	s.Close()
	s = openAt(t, path, testOpts(c))
	if n := s.Stats().Messages; n != 1 {
		t.Fatalf("the file holds %d messages, want the 1 committed before the loss", n)
	}
	if s.Owner().Token() != 3 {
		t.Fatalf("file token %d, want 3", s.Owner().Token())
	}
}

// A takeover's token is written into the file; an owner with an older one
// is refused there, whatever its lease says.
func TestFenceRefusesAnOlderToken(t *testing.T) {
	c := newClock()
	s, path := openTemp(t, testOpts(c))
	if err := s.Owner().Fence(7); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openAt(t, path, testOpts(c))
	if err := s.Owner().Fence(6); !errors.Is(err, ErrFenced) {
		t.Fatalf("Fence(6) over 7: %v, want ErrFenced", err)
	}
	if err := s.Owner().Fence(8); err != nil {
		t.Fatalf("Fence(8) over 7: %v", err)
	}
}

// A first attempt needs no write, so the fence is asked there too: a node
// that lost its lease starts no delivery of mail it accepted before.
func TestFirstClaimAsksTheFence(t *testing.T) {
	c := newClock()
	var lost atomic.Bool
	o := testOpts(c)
	o.Fence = func() error {
		if lost.Load() {
			return errors.New("lease expired")
		}
		return nil
	}
	s, _ := openTemp(t, o)
	d := s.NewDraft()
	d.Write([]byte("x\r\n"))
	env := Envelope{From: "s@example.org", Created: c.Now(), Recipients: []Recipient{{Address: "a@example.org"}}}
	env.ClaimFirst(c.Now().Add(60e9))
	if err := d.Commit(env); err != nil {
		t.Fatal(err)
	}
	stored, err := s.Get(d.ID())
	if err != nil {
		t.Fatal(err)
	}
	lost.Store(true)
	if cl := s.UseFirstClaim(stored, []string{"a@example.org"}, c.Now()); len(cl.Addrs) != 0 {
		t.Fatalf("first claim used after the lease was lost: %v", cl.Addrs)
	}
}
