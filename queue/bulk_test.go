package queue

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// enqueueFrom commits a message from sender to rcpts.
func enqueueFrom(t *testing.T, s *Store, sender string, rcpts ...string) string {
	t.Helper()
	d := s.NewDraft()
	if _, err := d.Write([]byte("Subject: x\r\n\r\nbody\r\n")); err != nil {
		t.Fatal(err)
	}
	env := Envelope{From: sender}
	for _, r := range rcpts {
		env.Recipients = append(env.Recipients, Recipient{Address: r})
	}
	if err := d.Commit(env); err != nil {
		t.Fatal(err)
	}
	return d.ID()
}

func TestSelectFilters(t *testing.T) {
	clock := newClock()
	s, _ := openTemp(t, testOpts(clock))
	old := enqueueFrom(t, s, "flood@app.example", "a@gmail.com")
	clock.Advance(2 * time.Hour)
	flood := enqueueFrom(t, s, "Flood@App.example", "b@example.net")
	other := enqueueFrom(t, s, "ok@app.example", "a@gmail.com", "c@example.net")
	bounce := enqueueFrom(t, s, "", "flood@app.example")
	now := clock.Now()

	cases := []struct {
		name string
		f    Filter
		ids  []string
		want []string
	}{
		{"everything", Filter{}, nil, []string{old, flood, other, bounce}},
		{"sender, any case", Filter{From: "flood@app.example"}, nil, []string{old, flood}},
		{"null sender", Filter{From: NullSender}, nil, []string{bounce}},
		{"recipient address", Filter{To: "A@gmail.com"}, nil, []string{old, other}},
		{"older than an hour", Filter{Before: now.Add(-time.Hour)}, nil, []string{old}},
		{"sender and domain", Filter{From: "flood@app.example", Domain: "example.net"}, nil, []string{flood}},
		{"ids narrowed by filter", Filter{Domain: "gmail.com"}, []string{flood, other, other}, []string{other}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Admin().Select(c.f, c.ids)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("Select = %v, want %v", got, c.want)
			}
		})
	}
	if _, err := s.Admin().Select(Filter{}, []string{other, "00000000000000000000"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown ID: %v, want ErrNotFound", err)
	}
}

func TestBulkActions(t *testing.T) {
	clock := newClock()
	s, _ := openTemp(t, testOpts(clock))
	now := clock.Now()
	var flood []string
	for range 3 {
		id := enqueueFrom(t, s, "flood@app.example", "x@example.net")
		if _, err := s.Record(id, []Outcome{{Address: "x@example.net", Status: StatusDeferred, NextAttempt: now.Add(time.Hour)}}); err != nil {
			t.Fatal(err)
		}
		flood = append(flood, id)
	}
	keep := enqueueFrom(t, s, "ok@app.example", "x@example.net")
	byFlood := Filter{From: "flood@app.example"}

	held, err := s.Admin().Bulk(BulkHold, byFlood, nil, now)
	if err != nil || !slices.Equal(held, flood) {
		t.Fatalf("hold: %v %v", held, err)
	}
	due, _ := s.due(now.Add(2*time.Hour), 0, nil)
	if slices.ContainsFunc(due, func(id string) bool { return slices.Contains(flood, id) }) {
		t.Errorf("held messages still scheduled: %v", due)
	}
	if got, _ := s.Admin().Select(Filter{Held: true}, nil); !slices.Equal(got, flood) {
		t.Errorf("held = %v, want %v", got, flood)
	}

	released, err := s.Admin().Bulk(BulkRelease, byFlood, flood[:2], now)
	if err != nil || !slices.Equal(released, flood[:2]) {
		t.Fatalf("release: %v %v", released, err)
	}
	due, _ = s.due(now, 0, nil)
	if !slices.Equal(due, []string{flood[0], flood[1], keep}) {
		t.Errorf("due after release = %v", due)
	}

	// An unknown ID fails the whole call: nothing is deleted.
	if _, err := s.Admin().Bulk(BulkDelete, Filter{}, []string{flood[0], "00000000000000000000"}, now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete with an unknown ID: %v", err)
	}
	if _, err := s.Get(flood[0]); err != nil {
		t.Fatalf("a failed bulk delete removed %s: %v", flood[0], err)
	}
	deleted, err := s.Admin().Bulk(BulkDelete, byFlood, nil, now)
	if err != nil || !slices.Equal(deleted, flood) {
		t.Fatalf("delete: %v %v", deleted, err)
	}
	left, _ := s.Admin().Select(Filter{}, nil)
	if !slices.Equal(left, []string{keep}) {
		t.Errorf("left after delete = %v, want only %s", left, keep)
	}
	if st := s.Stats(); st.Messages != 1 {
		t.Errorf("stats say %d messages, want 1", st.Messages)
	}
	if _, err := s.Admin().Bulk("purge", Filter{}, nil, now); err == nil {
		t.Error("unknown action accepted")
	}
}

func TestShape(t *testing.T) {
	clock := newClock()
	s, _ := openTemp(t, testOpts(clock))
	enqueueFrom(t, s, "a@x", "1@gmail.com", "2@GMAIL.com", "3@example.net") // gmail counted once
	clock.Advance(7 * time.Minute)
	enqueueFrom(t, s, "a@x", "4@gmail.com")
	clock.Advance(3 * time.Hour)
	enqueueFrom(t, s, "a@x", "5@example.org")
	rows, total, err := s.Admin().Shape(clock.Now(), "", 2)
	if err != nil {
		t.Fatal(err)
	}
	// Ages now: 3h7m, 3h, 0.
	want := []ShapeRow{
		{Domain: "gmail.com", Total: 2, Counts: []int{0, 0, 0, 0, 0, 0, 2}},
		{Domain: "example.net", Total: 1, Counts: []int{0, 0, 0, 0, 0, 0, 1}},
	}
	if len(rows) != 2 {
		t.Fatalf("rows %+v, want top 2", rows)
	}
	for i := range want {
		if rows[i].Domain != want[i].Domain || rows[i].Total != want[i].Total || !slices.Equal(rows[i].Counts, want[i].Counts) {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
	if total.Total != 3 || !slices.Equal(total.Counts, []int{1, 0, 0, 0, 0, 0, 2}) {
		t.Errorf("total = %+v", total)
	}
	if st := s.Stats(); st.Messages != 3 {
		t.Fatalf("stats: %+v", st)
	}
}
