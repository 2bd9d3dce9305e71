package queue

import (
	"fmt"
	"testing"
	"time"
)

// faultWrite changes the store behind its invariants' back, as a bug or
// a stray edit might.
func faultWrite(t *testing.T, s *Store, fn func(w *writeTx) error) {
	t.Helper()
	if err := s.submit(fn); err != nil {
		t.Fatal(err)
	}
}

// accountOnce runs a whole pass and returns its findings.
func accountOnce(t *testing.T, s *Store, a Accountable) []Finding {
	t.Helper()
	var all []Finding
	after := ""
	for {
		rep, err := s.Admin().Accountability(after, 100, a)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, rep.Findings...)
		if rep.Next == "" {
			return all
		}
		after = rep.Next
	}
}

// wantOne checks that findings are exactly one, of problem, for id.
func wantOne(t *testing.T, findings []Finding, id, problem string) {
	t.Helper()
	if len(findings) != 1 || findings[0].ID != id || len(findings[0].Problem) < len(problem) || findings[0].Problem[:len(problem)] != problem {
		t.Fatalf("findings %+v, want one %q for %s", findings, problem, id)
	}
}

// A message whose schedule entry is gone is never attempted; the check
// finds it and writes the entry back at its due time.
func TestAccountabilityRestoresAMissingScheduleEntry(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	id := enqueue(t, s, []byte("x\r\n"), "a@example.net")
	env, _ := s.Get(id)
	faultWrite(t, s, func(w *writeTx) error {
		b, err := w.bucket(bucketSchedule)
		if err != nil {
			return err
		}
		return b.Delete(scheduleKey(env))
	})
	if _, ok := entryOf(t, s, id); ok {
		t.Fatal("the fault left the entry")
	}
	a := Accountable{Now: c.Now(), MaxWait: time.Hour, MaxAge: 24 * time.Hour}
	wantOne(t, accountOnce(t, s, a), id, ProblemNoEntry)
	if en, ok := entryOf(t, s, id); !ok || en.Parked != "" || !en.At.Equal(env.Recipients[0].NextAttempt) {
		t.Fatalf("entry after the repair: %+v %v, want it unparked at %v", en, ok, env.Recipients[0].NextAttempt)
	}
	if f := accountOnce(t, s, a); len(f) != 0 {
		t.Fatalf("second pass found %+v", f)
	}
}

// A claim whose attempt never came (given up without an outcome) with its
// next attempt pushed past what the schedule allows is found and made due
// now; a claim whose attempt is still in flight is left alone.
func TestAccountabilityReschedulesAClaimLeftWithoutAttempt(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	lost := enqueue(t, s, []byte("x\r\n"), "a@example.net")
	flying := enqueue(t, s, []byte("y\r\n"), "b@example.net")
	for _, id := range []string{lost, flying} {
		env, _ := s.Get(id)
		if _, err := s.Claim(id, []string{env.Recipients[0].Address}, c.Now(), c.Now().Add(48*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	s.EndAttempt(lost, []string{"a@example.net"})
	c.Advance(time.Minute)
	a := Accountable{Now: c.Now(), MaxWait: time.Hour}
	findings := accountOnce(t, s, a)
	wantOne(t, findings, lost, ProblemTooLate)
	if findings[0].Address != "a@example.net" {
		t.Errorf("finding names %q", findings[0].Address)
	}
	env, _ := s.Get(lost)
	if got := env.Recipients[0].NextAttempt; !got.Equal(c.Now()) {
		t.Errorf("next attempt after the repair %v, want now %v", got, c.Now())
	}
	if en, ok := entryOf(t, s, lost); !ok || !en.At.Equal(c.Now()) {
		t.Errorf("entry after the repair %+v %v, want due now", en, ok)
	}
	if env, _ := s.Get(flying); env.Recipients[0].NextAttempt.Before(c.Now().Add(time.Hour)) {
		t.Error("a recipient with its attempt in flight was rescheduled")
	}
}

// A message parked behind a destination whose hold record is gone would
// wait for a release that never comes; the check unparks it. One parked
// behind a hold that exists is left alone.
func TestAccountabilityUnparksAnEntryWhoseHoldIsLost(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	id := enqueue(t, s, []byte("x\r\n"), "a@down.example")
	h := Hold{Until: c.Now().Add(time.Hour), Strikes: 1}
	if _, err := s.Park("route:down", &h, map[string][]string{id: {"a@down.example"}}, nil); err != nil {
		t.Fatal(err)
	}
	a := Accountable{Now: c.Now(), MaxWait: time.Hour}
	if f := accountOnce(t, s, a); len(f) != 0 {
		t.Fatalf("a parked entry with its hold: findings %+v", f)
	}
	faultWrite(t, s, func(w *writeTx) error {
		b, err := w.bucket(bucketHolds)
		if err != nil {
			return err
		}
		return b.Delete([]byte("route:down"))
	})
	wantOne(t, accountOnce(t, s, a), id, ProblemLostHold)
	if en, ok := entryOf(t, s, id); !ok || en.Parked != "" {
		t.Fatalf("entry after the repair: %+v %v, want it unparked", en, ok)
	}
}

// A recipient due after its message's max_age has run out would outlive
// its lifetime: found and made due now (its attempt then expires it).
func TestAccountabilityHoldsNextAttemptsWithinMaxAge(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	id := enqueue(t, s, []byte("x\r\n"), "a@example.net")
	if _, err := s.Claim(id, []string{"a@example.net"}, c.Now(), c.Now().Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	s.EndAttempt(id, []string{"a@example.net"})
	a := Accountable{Now: c.Now(), MaxWait: 6 * time.Hour, MaxAge: 2 * time.Hour}
	wantOne(t, accountOnce(t, s, a), id, ProblemTooLate)
}

// The check is incremental: each call reads at most limit envelopes and
// says where the next goes on; a pass over five messages in twos takes
// three calls and sees each once.
func TestAccountabilityIsBounded(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	for i := range 5 {
		enqueue(t, s, []byte(fmt.Sprintf("%d\r\n", i)), "a@example.net")
	}
	a := Accountable{Now: c.Now(), MaxWait: time.Hour}
	after, calls, seen := "", 0, 0
	for {
		rep, err := s.Admin().Accountability(after, 2, a)
		if err != nil {
			t.Fatal(err)
		}
		calls++
		seen += rep.Checked
		if rep.Checked > 2 {
			t.Fatalf("one call read %d envelopes, limit 2", rep.Checked)
		}
		if rep.Next == "" {
			break
		}
		after = rep.Next
	}
	if calls != 3 || seen != 5 {
		t.Fatalf("%d calls saw %d messages, want 3 and 5", calls, seen)
	}
}
