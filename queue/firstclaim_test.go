package queue

import (
	"slices"
	"testing"
	"time"
)

// The usual first attempt, right after the 250, uses its claim without a
// read transaction; after an operator's change to the store it reads, and
// a message the change did not touch keeps its claim.
func TestUseFirstClaimReadsNothing(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	now := c.Now()
	env := commitClaimed(t, s, now, now.Add(time.Minute), "a@example.net")
	all := []string{"a@example.net"}
	before := s.db.Stats().TxN
	if got := s.UseFirstClaim(&env, all, now); !slices.Equal(got.Addrs, all) {
		t.Fatalf("fresh claim: got %v", got.Addrs)
	}
	if n := s.db.Stats().TxN - before; n != 0 {
		t.Errorf("using the first claim took %d read transactions, want none", n)
	}

	other := enqueue(t, s, []byte("x"), "b@example.net")
	if err := s.Admin().Hold(other); err != nil {
		t.Fatal(err)
	}
	before = s.db.Stats().TxN
	if got := s.UseFirstClaim(&env, all, now); !slices.Equal(got.Addrs, all) {
		t.Errorf("claim of a message nobody touched: got %v", got.Addrs)
	}
	if n := s.db.Stats().TxN - before; n != 1 {
		t.Errorf("after an operator's hold: %d read transactions, want 1 (the store is asked)", n)
	}
	later := commitClaimed(t, s, now, now.Add(time.Minute), "c@example.net")
	before = s.db.Stats().TxN
	if got := s.UseFirstClaim(&later, []string{"c@example.net"}, now); len(got.Addrs) != 1 {
		t.Errorf("message committed after the hold: got %v", got.Addrs)
	}
	if n := s.db.Stats().TxN - before; n != 0 {
		t.Errorf("message committed after the hold: %d read transactions, want none", n)
	}
}

// A park (Postpone) takes the first claim back; a handed-over envelope
// that still shows it is not used.
func TestUseFirstClaimAfterPostpone(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	now := c.Now()
	env := commitClaimed(t, s, now, now.Add(time.Minute), "a@example.net")
	if err := s.Postpone(map[string][]string{env.ID: {"a@example.net"}}, now.Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if got := s.UseFirstClaim(&env, []string{"a@example.net"}, now); len(got.Addrs) != 0 {
		t.Errorf("claim of a parked message was used for %v", got.Addrs)
	}
}
