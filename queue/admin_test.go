package queue

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func listIDs(t *testing.T, s *Store, o ListOptions) ([]string, string) {
	t.Helper()
	msgs, next, err := s.Admin().List(o)
	if err != nil {
		t.Fatalf("List(%+v): %v", o, err)
	}
	var ids []string
	for _, m := range msgs {
		ids = append(ids, m.ID)
	}
	return ids, next
}

func TestListFiltersAndPaging(t *testing.T) {
	clock := newClock()
	s, _ := openTemp(t, testOpts(clock))
	now := clock.Now()
	gm := enqueue(t, s, nil, "x@Gmail.com")
	ex := enqueue(t, s, nil, "y@example.net", "z@gmail.com")
	def := enqueue(t, s, nil, "w@example.net")
	if _, err := s.Record(def, []Outcome{{Address: "w@example.net", Status: StatusDeferred, NextAttempt: now.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	held := enqueue(t, s, nil, "v@example.org")
	if err := s.Admin().Hold(held); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		o    ListOptions
		want []string
	}{
		{"all", ListOptions{}, []string{gm, ex, def, held}},
		{"domain any case", ListOptions{Domain: "GMAIL.COM"}, []string{gm, ex}},
		{"deferred", ListOptions{Status: StatusDeferred}, []string{def}},
		{"queued", ListOptions{Status: StatusQueued}, []string{gm, ex, held}},
		{"held", ListOptions{Held: true}, []string{held}},
		{"after cursor", ListOptions{After: ex}, []string{def, held}},
		{"domain and status", ListOptions{Domain: "example.net", Status: StatusQueued}, []string{ex}},
		{"no match", ListOptions{Domain: "example.com"}, nil},
	}
	for _, tc := range cases {
		if got, next := listIDs(t, s, tc.o); !slices.Equal(got, tc.want) || next != "" {
			t.Errorf("%s: got %v next %q, want %v", tc.name, got, next, tc.want)
		}
	}

	// Paging with Limit 1 over the gmail messages: two pages, then done.
	got1, next := listIDs(t, s, ListOptions{Domain: "gmail.com", Limit: 1})
	if !slices.Equal(got1, []string{gm}) || next != gm {
		t.Fatalf("page 1: %v next %q", got1, next)
	}
	got2, next := listIDs(t, s, ListOptions{Domain: "gmail.com", Limit: 1, After: next})
	if !slices.Equal(got2, []string{ex}) || next != "" {
		t.Errorf("page 2: %v next %q, want [ex] and no more", got2, next)
	}
}

func TestRetryHoldReleaseDeleteFlush(t *testing.T) {
	clock := newClock()
	s, _ := openTemp(t, testOpts(clock))
	now := clock.Now()
	later := now.Add(time.Hour)
	a, b, c := threeWaiting(t, s, now, later)

	// Retry: due now, attempts untouched, final recipient untouched.
	if err := s.Admin().Retry(a, now); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.due(now, 0, nil); !slices.Equal(ids, []string{a}) {
		t.Errorf("after Retry(a) Due = %v", ids)
	}
	env, _ := s.Get(a)
	if env.Recipients[1].Attempts != 1 || env.Recipients[0].Status != StatusDelivered || !env.Recipients[0].NextAttempt.IsZero() {
		t.Errorf("after Retry: %+v", env.Recipients)
	}

	// Hold removes from the schedule; Flush leaves held messages alone.
	if err := s.Admin().Hold(b); err != nil {
		t.Fatal(err)
	}
	n, err := s.Admin().Flush(now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 { // c only: a was due already, b is held
		t.Errorf("Flush touched %d messages, want 1", n)
	}
	if ids, _ := s.due(now, 0, nil); !slices.Equal(ids, []string{a, c}) {
		t.Errorf("after Flush Due = %v, want a, c", ids)
	}
	if st := s.Stats(); st.Held != 1 {
		t.Errorf("Stats.Held = %d", st.Held)
	}

	// Release: back in the schedule, due at the release time.
	clock.Advance(time.Minute)
	rel := clock.Now()
	if err := s.Admin().Release(b, rel); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.due(rel, 0, nil); !slices.Equal(ids, []string{a, c, b}) { // b due at rel, after a and c
		t.Errorf("after Release Due = %v", ids)
	}
	if st := s.Stats(); st.Held != 0 {
		t.Errorf("Stats.Held = %d after release", st.Held)
	}

	// Delete: gone everywhere.
	if err := s.Admin().Delete(c); err != nil {
		t.Fatal(err)
	}
	checkGone(t, s, c, rel)
	if ids, _ := s.due(rel, 0, nil); !slices.Equal(ids, []string{a, b}) {
		t.Errorf("after Delete Due = %v", ids)
	}
	if st := s.Stats(); st.Messages != 2 {
		t.Errorf("Stats.Messages = %d, want 2", st.Messages)
	}
}

// threeWaiting queues three messages, all attempted at now: a with one
// recipient delivered and one deferred to later, b deferred to later, c
// still claimed (due at later). Nothing is due at now.
func threeWaiting(t *testing.T, s *Store, now, later time.Time) (a, b, c string) {
	t.Helper()
	a = enqueue(t, s, []byte("a"), "a1@example.net", "a2@example.net")
	b = enqueue(t, s, []byte("b"), "b@example.net")
	c = enqueue(t, s, []byte("c"), "c@example.net")
	for _, id := range []string{a, b, c} {
		env, _ := s.Get(id)
		var addrs []string
		for _, r := range env.Recipients {
			addrs = append(addrs, r.Address)
		}
		if _, err := s.Claim(id, addrs, now, later); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Record(a, []Outcome{
		{Address: "a1@example.net", Status: StatusDelivered},
		{Address: "a2@example.net", Status: StatusDeferred, NextAttempt: later},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(b, []Outcome{{Address: "b@example.net", Status: StatusDeferred, NextAttempt: later}}); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.due(now, 0, nil); len(ids) != 0 {
		t.Fatalf("nothing should be due yet: %v", ids)
	}
	return a, b, c
}

// checkGone checks that deleted message id is found by no operation.
func checkGone(t *testing.T, s *Store, id string, now time.Time) {
	t.Helper()
	if _, err := s.Get(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete: %v", err)
	}
	for name, err := range map[string]error{
		"Delete":  s.Admin().Delete(id),
		"Hold":    s.Admin().Hold(id),
		"Retry":   s.Admin().Retry(id, now),
		"Release": s.Admin().Release(id, now),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s of deleted message: %v, want ErrNotFound", name, err)
		}
	}
}
