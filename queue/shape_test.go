package queue

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// shapeByDecoding is Shape as it was before the index and readShape:
// every envelope decoded whole. The tests hold readShape to its answers.
func shapeByDecoding(s *Store, now time.Time, status Status, top int) ([]ShapeRow, ShapeRow, error) {
	rows := map[string]*ShapeRow{}
	total := ShapeRow{Domain: "TOTAL", Counts: make([]int, len(ShapeBuckets)+1)}
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketEnvelopes).ForEach(func(_, v []byte) error {
			env, err := decodeEnvelope(v)
			if err != nil {
				return nil
			}
			col := ageColumn(now.Sub(env.Created))
			counted := map[string]bool{}
			waiting := false
			for _, r := range env.Recipients {
				if r.Status.Final() || (status != "" && r.Status != status) {
					continue
				}
				waiting = true
				d := string(lowerBytes([]byte(domainOf(r.Address))))
				if counted[d] {
					continue
				}
				counted[d] = true
				row := rows[d]
				if row == nil {
					row = &ShapeRow{Domain: d, Counts: make([]int, len(ShapeBuckets)+1)}
					rows[d] = row
				}
				row.Total++
				row.Counts[col]++
			}
			if waiting {
				total.Total++
				total.Counts[col]++
			}
			return nil
		})
	})
	if err != nil {
		return nil, ShapeRow{}, err
	}
	out := make([]ShapeRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Total != out[j].Total {
			return out[i].Total > out[j].Total
		}
		return out[i].Domain < out[j].Domain
	})
	if top > 0 && len(out) > top {
		out = out[:top]
	}
	return out, total, nil
}

func lowerBytes(b []byte) []byte {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return b
}

// shapeDomains are recipient domains of every kind Shape must tell apart
// or merge: case, none, an @ in the local part.
var shapeDomains = []string{"gmail.com", "GMail.COM", "example.net", "Example.NET", "x.org", "", "b@c.example"}

// variedEnvelope is a message of random shape: 1 to 5 recipients of every
// status, created in any of Shape's columns (or at the zero time), held,
// streamed, released, with NOTIFY lists.
func variedEnvelope(rng *rand.Rand, i int, now time.Time) *Envelope {
	env := &Envelope{
		ID: fmt.Sprintf("m%06d", i), From: "a@x", Size: 100, Prefix: "Received: x\r\n",
		Created: now.Add(-time.Duration(rng.Int64N(int64(5 * time.Hour)))),
		Held:    rng.IntN(5) == 0, Subject: "s", MessageID: "<id@x>",
	}
	switch rng.IntN(10) {
	case 0:
		env.Created = time.Time{}
	case 1:
		env.Created = now.Add(-ShapeBuckets[rng.IntN(len(ShapeBuckets))]) // on a column's edge
	case 2:
		env.Sender.Stream = "news"
	case 3:
		env.Release = now.Add(time.Hour)
	}
	statuses := []Status{StatusQueued, StatusDeferred, StatusDelivered, StatusBounced, StatusScheduled}
	for j := range 1 + rng.IntN(5) {
		addr := fmt.Sprintf("u%d", j)
		if d := shapeDomains[rng.IntN(len(shapeDomains))]; d != "" {
			addr += "@" + d
		}
		r := Recipient{Address: addr, Status: statuses[rng.IntN(len(statuses))], Attempts: rng.IntN(3),
			NextAttempt: now.Add(time.Minute), LastReply: "451 later"}
		if rng.IntN(3) == 0 {
			r.Notify = []string{"SUCCESS", "FAILURE"}
		}
		if rng.IntN(4) == 0 {
			r.Report, r.Warned = ReportDelayed, true
		}
		env.Recipients = append(env.Recipients, r)
	}
	return env
}

// storedForms are env's record in each format Shape may meet, with
// damaged ones (which neither path counts).
func storedForms(t *testing.T, rng *rand.Rand, env *Envelope) []byte {
	t.Helper()
	switch rng.IntN(12) {
	case 0:
		b, err := encodeV2(env)
		if err != nil {
			t.Fatal(err)
		}
		return b
	case 1:
		js, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		return append([]byte{recordV1}, js...)
	case 2: // a flipped bit: the checksum fails
		b, _ := encodeEnvelope(env)
		b[5+rng.IntN(len(b)-5)] ^= 0x10
		return b
	case 3: // what validate refuses, under a valid checksum
		bad := *env
		bad.Recipients = slices.Clone(env.Recipients)
		switch rng.IntN(4) {
		case 0:
			bad.Recipients[0].Address = ""
		case 1:
			bad.Recipients[0].Status = "parked"
		case 2:
			bad.Size = 1
		case 3:
			bad.ID = ""
		}
		b, _ := encodeEnvelope(&bad)
		return b
	}
	b, err := encodeEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestShapeReadsAsDecode: scanShape, reading records in place, gives what
// decoding every envelope gave, for every status and top, on a queue of
// varied messages in every stored format, damaged records among them.
func TestShapeReadsAsDecode(t *testing.T) {
	clock := newClock()
	s, _ := openTemp(t, testOpts(clock))
	now := clock.Now()
	rng := rand.New(rand.NewPCG(31, 1))
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketEnvelopes)
		if err != nil {
			return err
		}
		for i := range 3000 {
			env := variedEnvelope(rng, i, now)
			if err := b.Put([]byte(fmt.Sprintf("m%06d", i)), storedForms(t, rng, env)); err != nil {
				return err
			}
		}
		_, err = b.CreateBucket([]byte("nested")) // a bucket where a record should be
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []Status{"", StatusQueued, StatusDeferred, StatusScheduled, StatusDelivered} {
		for _, top := range []int{0, 2} {
			rows, total, err := s.scanShape(now, st, top)
			if err != nil {
				t.Fatal(err)
			}
			wantRows, wantTotal, err := shapeByDecoding(s, now, st, top)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(rows) != fmt.Sprint(wantRows) || fmt.Sprint(total) != fmt.Sprint(wantTotal) {
				t.Errorf("Shape(%q, %d) =\n%v %v\nwant (decoding every envelope)\n%v %v", st, top, rows, total, wantRows, wantTotal)
			}
			if st == "" && top == 0 && (len(rows) < 5 || total.Total < 1000) {
				t.Errorf("the varied queue is not varied: %v %v", rows, total)
			}
		}
	}
}

// shapeAgrees checks readShape against decodeEnvelope on one version-3
// record: the same verdict and, when accepted, the same created time and
// waiting domains.
func shapeAgrees(t *testing.T, rec []byte) {
	t.Helper()
	sc := newShapeScan(time.Time{}, "")
	created, ok := sc.readShape(rec)
	env, err := decodeEnvelope(rec)
	if ok != (err == nil) {
		t.Fatalf("readShape accepts %v, decodeEnvelope says %v, record %x", ok, err, rec)
	}
	if !ok {
		return
	}
	ref := newShapeScan(time.Time{}, "")
	for _, r := range env.Recipients {
		ref.waiting(r.Status, []byte(r.Address))
	}
	if !created.Equal(env.Created) || string(sc.lower) != string(ref.lower) || !slices.Equal(sc.ends, ref.ends) {
		t.Fatalf("readShape read %v %q %v, decoding %v %q %v", created, sc.lower, sc.ends, env.Created, ref.lower, ref.ends)
	}
}

// withChecksum makes fields a version-3 record with a valid checksum.
func withChecksum(fields []byte) []byte {
	b := append([]byte{recordV3, 0, 0, 0, 0}, fields...)
	binary.BigEndian.PutUint32(b[1:5], crc32.Checksum(b[5:], castagnoli))
	return b
}

// TestShapeRecordMutations: every byte of varied records changed (and
// the checksum made to hold) leaves readShape and decodeEnvelope agreeing
// on whether the record counts and what it counts.
func TestShapeRecordMutations(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 2))
	now := newClock().Now()
	for i := range 40 {
		rec, err := encodeEnvelope(variedEnvelope(rng, i, now))
		if err != nil {
			t.Fatal(err)
		}
		shapeAgrees(t, rec)
		fields := rec[5:]
		for pos := range fields {
			for _, v := range []byte{0, 1, 4, 0x7f, 0x80, 0xff, fields[pos] + 1, fields[pos] - 1} {
				m := slices.Clone(fields)
				m[pos] = v
				shapeAgrees(t, withChecksum(m))
			}
			shapeAgrees(t, withChecksum(fields[:pos]))
		}
		shapeAgrees(t, withChecksum(append(slices.Clone(fields), 0)))
	}
}

// FuzzShapeRecord: on any fields under a valid checksum, readShape and
// decodeEnvelope agree.
func FuzzShapeRecord(f *testing.F) {
	rng := rand.New(rand.NewPCG(31, 3))
	for i := range 8 {
		rec, _ := encodeEnvelope(variedEnvelope(rng, i, newClock().Now()))
		f.Add(rec[5:])
	}
	f.Fuzz(func(t *testing.T, fields []byte) {
		shapeAgrees(t, withChecksum(fields))
	})
}
