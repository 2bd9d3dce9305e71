package queue

import (
	"slices"
	"testing"
	"time"
)

// commitClaimed queues a message whose first attempt was claimed at
// acceptance, as the engine does, and returns it as stored.
func commitClaimed(t *testing.T, s *Store, now, retry time.Time, rcpts ...string) Envelope {
	t.Helper()
	d := s.NewDraft()
	d.Write([]byte("x\r\n"))
	env := Envelope{From: "a@example.org", Created: now}
	for _, r := range rcpts {
		env.Recipients = append(env.Recipients, Recipient{Address: r})
	}
	env.ClaimFirst(retry)
	if err := d.Commit(env); err != nil {
		t.Fatal(err)
	}
	return d.Committed()
}

// Claim says which recipients it claimed: the named, due, non-final ones.
func TestClaimReturnsWhatItClaimed(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	id := enqueue(t, s, []byte("hi"), "a@example.net", "b@example.net", "c@example.net")
	now := c.Now()
	got, err := s.Claim(id, []string{"a@example.net", "b@example.net"}, now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Addrs, []string{"a@example.net", "b@example.net"}) {
		t.Errorf("claimed %v, want a and b", got.Addrs)
	}
	// Claimed again before the retry time: nothing is due, nothing claimed.
	got, err = s.Claim(id, []string{"a@example.net", "c@example.net"}, now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Addrs, []string{"c@example.net"}) {
		t.Errorf("second claim took %v, want only c (a is not due)", got.Addrs)
	}
	if got.Recipients[0].Attempts != 1 {
		t.Errorf("a claimed twice: %+v", got.Recipients[0])
	}
}

// The claim made at acceptance is used once, while it protects the
// message, and only while the store still has the message as it was.
func TestUseFirstClaim(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	now := c.Now()
	retry := now.Add(2 * time.Second)
	env := commitClaimed(t, s, now, retry, "a@example.net", "b@example.net")
	if !env.FirstClaimed(env.Recipients[0]) {
		t.Fatalf("committed recipient lost its claim: %+v", env.Recipients[0])
	}
	all := []string{"a@example.net", "b@example.net"}
	if got := s.UseFirstClaim(&env, all, now); !slices.Equal(got.Addrs, all) || got.Envelope == nil {
		t.Errorf("fresh claim: got %v, want both recipients", got.Addrs)
	}
	if got := s.UseFirstClaim(&env, all, retry); len(got.Addrs) != 0 {
		t.Errorf("claim that ran out was used for %v", got.Addrs)
	}
	// An attempt that used it leaves a reply: it is no longer the first claim.
	used := env
	used.Recipients = slices.Clone(env.Recipients)
	used.Recipients[0].LastReply = "451 4.7.1 later"
	if used.FirstClaimed(used.Recipients[0]) {
		t.Error("a claim with a reply counts as unused")
	}
	if got := s.UseFirstClaim(&used, all, now); len(got.Addrs) != 0 {
		t.Errorf("partly used claim was used again for %v", got.Addrs)
	}
	if err := s.Admin().Hold(env.ID); err != nil {
		t.Fatal(err)
	}
	if got := s.UseFirstClaim(&env, all, now); len(got.Addrs) != 0 {
		t.Errorf("claim of a held message was used for %v", got.Addrs)
	}
}

// A message committed without the claim is due at once and has none.
func TestCommitWithoutClaimHasNone(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	id := enqueue(t, s, []byte("hi"), "a@example.net")
	env, err := s.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if env.FirstClaimed(env.Recipients[0]) || !env.Recipients[0].NextAttempt.Equal(env.Created) {
		t.Errorf("unclaimed message: %+v", env.Recipients[0])
	}
	if got := s.UseFirstClaim(env, []string{"a@example.net"}, c.Now()); len(got.Addrs) != 0 {
		t.Errorf("claim used that was never made: %v", got.Addrs)
	}
}
