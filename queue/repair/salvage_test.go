package repair

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relayq/relayq/queue/queuetest"
	bolt "go.etcd.io/bbolt"
)

// salvageAndRead salvages p into a new file and reads every message of
// bodies back from it: each must be byte-identical or quarantined.
func salvageAndRead(t *testing.T, p string, bodies map[string][]byte) (kept, lost int, rep *SalvageReport) {
	t.Helper()
	to := filepath.Join(t.TempDir(), "salvaged.db")
	rep, err := Salvage(p, to, queuetest.Options(queuetest.NewClock()))
	if err != nil {
		t.Fatalf("Salvage: %v", err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the damaged file is gone: %v", err)
	}
	s := queuetest.Open(t, to, queuetest.Options(queuetest.NewClock()))
	quarantined := map[string]bool{}
	list, err := allQuarantined(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range list {
		quarantined[q.ID] = true
	}
	for id, want := range bodies {
		if _, err := s.Get(id); err != nil {
			lost++
			continue
		}
		if got := queuetest.ReadBody(t, s, id); !bytes.Equal(got, want) {
			t.Errorf("%s: salvaged body differs", id)
		}
		kept++
	}
	if st := s.Stats(); st.Messages != kept {
		t.Errorf("salvaged file holds %d messages, %d of them ours", st.Messages, kept)
	}
	if rep.Messages != kept {
		t.Errorf("report says %d messages kept, the file has %d", rep.Messages, kept)
	}
	return kept, lost, rep
}

func TestSalvageSoundFileKeepsEverything(t *testing.T) {
	path, bodies := queuetest.Fill(t, 30)
	kept, lost, rep := salvageAndRead(t, path, bodies)
	if lost != 0 || kept != len(bodies) || len(rep.Problems)+len(rep.Unreadable) != 0 {
		t.Errorf("salvage of a sound file: kept %d, lost %d, report %+v", kept, lost, rep)
	}
	if _, err := Salvage(path, path, queuetest.Options(queuetest.NewClock())); err == nil {
		t.Error("Salvage onto an existing file succeeded")
	}
}

func TestSalvageDamagedFiles(t *testing.T) {
	path, bodies := queuetest.Fill(t, 60)
	orig, _ := os.ReadFile(path)
	// Cut in half: what lies in the first half is kept.
	half := filepath.Join(t.TempDir(), "queue.db")
	os.WriteFile(half, orig[:len(orig)/2], 0o600)
	kept, lost, rep := salvageAndRead(t, half, bodies)
	t.Logf("truncated: kept %d, lost %d, quarantined %d, unreadable %d", kept, lost, len(rep.Problems), len(rep.Unreadable))
	if len(rep.Unreadable) == 0 {
		t.Error("a truncated file salvaged without any unreadable part reported")
	}
	for seed := int64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewSource(seed))
		b := bytes.Clone(orig)
		for range 100 {
			b[2*4096+rng.Intn(len(b)-2*4096)] ^= byte(1 + rng.Intn(255))
		}
		p := filepath.Join(t.TempDir(), "queue.db")
		os.WriteFile(p, b, 0o600)
		kept, lost, rep := salvageAndRead(t, p, bodies)
		t.Logf("seed %d: kept %d, lost %d, quarantined %d, unreadable %d", seed, kept, lost, len(rep.Problems), len(rep.Unreadable))
	}
}

// The VERP key lives in the queue file: a salvaged file that lost it would
// refuse every report for mail sent before the salvage as forged.
func TestSalvageKeepsRelayqsOwnKeys(t *testing.T) {
	path, _ := queuetest.Fill(t, 3)
	s := queuetest.Open(t, path, queuetest.Options(queuetest.NewClock()))
	key, err := s.ReturnPath().Secret("verp", 32)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "salvaged.db")
	if _, err := Salvage(path, to, queuetest.Options(queuetest.NewClock())); err != nil {
		t.Fatalf("Salvage: %v", err)
	}
	got, err := queuetest.Open(t, to, queuetest.Options(queuetest.NewClock())).ReturnPath().Secret("verp", 32)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, key) {
		t.Error("the salvaged file holds a new VERP key: reports for mail sent before the salvage would be refused")
	}
}

// A top-level bucket under a name relayq does not write (a byte flipped in
// the root page's key) is not copied, and the report says so: what it
// held is not lost silently.
func TestSalvageReportsAnUnknownTopLevelBucket(t *testing.T) {
	path, bodies := queuetest.Fill(t, 3)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("envelo\x10es"))
		if err == nil {
			err = b.Put([]byte("18EC0000000000000001"), []byte("an envelope out of reach"))
		}
		return err
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	_, _, rep := salvageAndRead(t, path, bodies)
	if len(rep.Unreadable) != 1 || !strings.Contains(rep.Unreadable[0], `"envelo\x10es"`) {
		t.Errorf("unreadable %q, want the unknown bucket named", rep.Unreadable)
	}
}
