package queue

import (
	"testing"
	"time"
)

// benchClaimed commits one message to a@example.net carrying its first
// claim, as the Acceptor does.
func benchClaimed(b *testing.B, s *Store, now time.Time) Envelope {
	d := s.NewDraft()
	d.Write([]byte("x\r\n"))
	env := Envelope{From: "a@example.org", Created: now, Recipients: []Recipient{{Address: "a@example.net"}}}
	env.ClaimFirst(now.Add(time.Minute))
	if err := d.Commit(env); err != nil {
		b.Fatal(err)
	}
	return d.Committed()
}

// BenchmarkFirstAttemptClaim is the store's part of the usual first
// attempt around its SMTP: using the claim made at acceptance, then
// ending the attempt (what in-flight bookkeeping costs every message).
func BenchmarkFirstAttemptClaim(b *testing.B) {
	c := newClock()
	s, _ := openTemp(b, testOpts(c))
	now := c.Now()
	env := benchClaimed(b, s, now)
	addrs := []string{"a@example.net"}
	b.ReportAllocs()
	for b.Loop() {
		if got := s.UseFirstClaim(&env, addrs, now); len(got.Addrs) != 1 {
			b.Fatal("first claim not used")
		}
		s.EndAttempt(env.ID, addrs)
	}
}

// BenchmarkClaimRecord is a retry's two writes: Claim, then Record of a
// deferral that makes the recipient due again.
func BenchmarkClaimRecord(b *testing.B) {
	c := newClock()
	s, _ := openTemp(b, testOpts(c))
	now := c.Now()
	id := benchClaimed(b, s, now.Add(-time.Hour)).ID
	addrs := []string{"a@example.net"}
	out := []Outcome{{Address: "a@example.net", Status: StatusDeferred, Reply: "451 4.7.1 later", NextAttempt: now}}
	b.ReportAllocs()
	for b.Loop() {
		if cl, err := s.Claim(id, addrs, now, now.Add(time.Hour)); err != nil || len(cl.Addrs) != 1 {
			b.Fatal(cl.Addrs, err)
		}
		if _, err := s.Record(id, out); err != nil {
			b.Fatal(err)
		}
	}
}
