package queue

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Policies and TLS results survive a restart; a damaged policy value is
// reported as such, never returned.
func TestTLSDataSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TLS().PutPolicy("example.org", []byte(`{"id":"one"}`)); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	for _, r := range []TLSResult{{"sts", "mx.example.org", ""}, {"sts", "mx.example.org", ""}, {"sts", "mx.example.org", "starttls-not-supported"}} {
		if err := s.TLS().Record("Example.ORG", day, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TLS().Record("example.org", day.Add(2*time.Hour), TLSResult{"sts", "mx.example.org", ""}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, ok, err := s.TLS().Policy("example.org"); !ok || err != nil || string(v) != `{"id":"one"}` {
		t.Fatalf("TLSPolicy after restart = %q, %v, %v", v, ok, err)
	}
	if _, ok, err := s.TLS().Policy("example.net"); ok || err != nil {
		t.Fatalf("unknown domain: %v %v", ok, err)
	}
	counts, err := s.TLS().Day("example.org", day)
	if err != nil || len(counts) != 2 || counts[0].N != 2 || counts[1].N != 1 || counts[1].Failure != "starttls-not-supported" {
		t.Fatalf("TLSDay = %+v, %v", counts, err)
	}
	if next, _ := s.TLS().Day("example.org", day.Add(2*time.Hour)); len(next) != 1 || next[0].N != 1 {
		t.Fatalf("next day = %+v", next)
	}

	// Flip a byte of the stored policy: the checksum catches it.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTLSPolicies)
		v := append([]byte(nil), b.Get([]byte("example.org"))...)
		v[len(v)-1] ^= 1
		return b.Put([]byte("example.org"), v)
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.TLS().Policy("example.org"); !errors.Is(err, ErrDamaged) {
		t.Fatalf("damaged policy: %v, want ErrDamaged", err)
	}
}

// Stored TLS counts come from disk: the decoder never panics on any bytes.
func FuzzDecodeTLSCounts(f *testing.F) {
	f.Add(sealed([]byte(`[{"Policy":"sts","MX":"mx","Failure":"","n":3}]`)))
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		counts, err := decodeTLSCounts(b)
		if err == nil {
			for _, c := range counts {
				if c.N < 0 {
					t.Fatalf("negative count accepted: %+v", c)
				}
			}
		}
	})
}

// An outcome's TLS-RPT count is written in Record's own commit: an
// attempt costs one commit, count included.
func TestRecordCountsTLSInItsCommit(t *testing.T) {
	c := newClock()
	s, _ := openTemp(t, testOpts(c))
	id := enqueue(t, s, []byte("hi"), "a@example.org")
	before := s.Stats().Commits
	tally := &TLSTally{Domain: "example.org", At: c.Now(), Result: TLSResult{"tlsa", "mx.example.org", ""}}
	if _, err := s.Record(id, []Outcome{{Address: "a@example.org", Status: StatusDelivered, Reply: "250 ok", TLSRPT: tally}}); err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().Commits - before; n != 1 {
		t.Errorf("recording the outcome took %d commits, want 1", n)
	}
	counts, err := s.TLS().Day("example.org", c.Now())
	if err != nil || len(counts) != 1 || counts[0].N != 1 || counts[0].Policy != "tlsa" {
		t.Errorf("TLSDay = %+v, %v", counts, err)
	}
}
