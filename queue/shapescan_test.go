package queue

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/relayq/relayq/queue/internal/record"
)

// The scan of the file that the shape index is held to: what Shape did
// before the index, reading each envelope record in place (readShape)
// rather than decoding it whole. TestShapeReadsAsDecode holds the scan to
// decoding every envelope, TestShapeIndexAgreesWithScan the index to the
// scan.

// scanShape is Shape counted from every envelope record, read in place
// (shapeScan.record). The tests hold the index to it.
func (s *Store) scanShape(now time.Time, status Status, top int) ([]ShapeRow, ShapeRow, error) {
	sc := newShapeScan(now, status)
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEnvelopes)
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			sc.record(v)
			return nil
		})
	})
	s.scannedAll()
	if err != nil {
		return nil, ShapeRow{}, err
	}
	return sc.result(top)
}

// shapeTally is one domain's row while a scan adds it up; seen is the
// number of the last record counted in it, so a record with several
// recipients there counts once.
type shapeTally struct {
	row  ShapeRow
	seen int
}

// shapeScan adds up Shape's rows, one envelope record at a time.
type shapeScan struct {
	now    time.Time
	status Status
	rows   map[string]*shapeTally
	total  ShapeRow
	// seq numbers the records counted.
	seq int
	// lower holds the lower-cased domains of the current record's waiting
	// recipients back to back, ends where each ends: reused for every
	// record, so counting allocates only for a domain's first row.
	lower []byte
	ends  []int
}

func newShapeScan(now time.Time, status Status) *shapeScan {
	return &shapeScan{
		now: now, status: status, rows: map[string]*shapeTally{},
		total: ShapeRow{Domain: "TOTAL", Counts: make([]int, len(ShapeBuckets)+1)},
	}
}

// record counts one stored envelope record; one that does not decode is
// left out (quarantine is the integrity checker's job; shape counts what
// it can read). Version-3 records are read in place (readShape), which
// accepts exactly the records decodeEnvelope does; older ones are
// decoded.
func (sc *shapeScan) record(v []byte) {
	sc.lower, sc.ends = sc.lower[:0], sc.ends[:0]
	var created time.Time
	if len(v) > 0 && v[0] == recordV3 {
		c, ok := sc.readShape(v)
		if !ok {
			return
		}
		created = c
	} else {
		env, err := decodeEnvelope(v)
		if err != nil {
			return
		}
		for i := range env.Recipients {
			sc.waiting(env.Recipients[i].Status, []byte(env.Recipients[i].Address))
		}
		created = env.Created
	}
	sc.count(created)
}

// waiting notes a recipient of the current record: its domain, lower-cased,
// if it waits with the status the scan counts.
func (sc *shapeScan) waiting(st Status, addr []byte) {
	if st.Final() || (sc.status != "" && st != sc.status) {
		return
	}
	d := addr[len(addr):]
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == '@' {
			d = addr[i+1:]
			break
		}
	}
	for _, c := range d {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		sc.lower = append(sc.lower, c)
	}
	sc.ends = append(sc.ends, len(sc.lower))
}

// count adds the current record, created at created, to the rows of the
// domains waiting() noted and to the total.
func (sc *shapeScan) count(created time.Time) {
	if len(sc.ends) == 0 {
		return
	}
	sc.seq++
	col := ageColumn(sc.now.Sub(created))
	start := 0
	for _, end := range sc.ends {
		d := sc.lower[start:end]
		start = end
		t := sc.rows[string(d)]
		if t == nil {
			t = &shapeTally{row: ShapeRow{Domain: string(d), Counts: make([]int, len(ShapeBuckets)+1)}}
			sc.rows[t.row.Domain] = t
		}
		if t.seen == sc.seq {
			continue
		}
		t.seen = sc.seq
		t.row.Total++
		t.row.Counts[col]++
	}
	sc.total.Total++
	sc.total.Counts[col]++
}

// result is the rows busiest first, at most top (0: all), and the total.
func (sc *shapeScan) result(top int) ([]ShapeRow, ShapeRow, error) {
	rows := make(map[string]*ShapeRow, len(sc.rows))
	for d, t := range sc.rows {
		rows[d] = &t.row
	}
	return sortShape(rows, top), sc.total, nil
}

// readShape reads a version-3 envelope record (codec.go) for Shape: its
// created time, and each recipient's status and address, handed to
// waiting. Every other field is skipped, not copied. It reports false for
// exactly the records decodeEnvelope rejects (a bad checksum, fields that
// do not parse or are left over, or what validate refuses), so Shape
// counts what it counted when it decoded whole envelopes
// (TestShapeReadsAsDecode, FuzzShapeRecord).
func (sc *shapeScan) readShape(b []byte) (time.Time, bool) {
	if len(b) < 5 || crc32.Checksum(b[5:], castagnoli) != binary.BigEndian.Uint32(b[1:5]) {
		return time.Time{}, false
	}
	r := histReader{Reader: record.NewReader(b[5:])}
	idLen, prefixLen := r.skipped(), r.skipped()
	flags := r.Byte()
	created := record.TimeOf(r.Varint())
	size := r.Varint()
	for range 9 { // from, ret, envid, body, auth_user, client_addr, helo, message_id, subject
		r.skipString()
	}
	if flags&histStream != 0 {
		r.skipString()
	}
	n := r.Count()
	for range n {
		if st, addr, ok := r.shapeRecipient(); ok {
			sc.waiting(st, addr)
		}
	}
	if flags&histRelease != 0 {
		r.Varint()
	}
	if flags&histEvents != 0 && r.Uvarint() == 0 {
		r.Fail()
	}
	if flags&histDKIM != 0 && r.Str() == "" {
		r.Fail()
	}
	ok := r.End() == nil && flags&^(histUTF8|histHeld|histRelease|histStream|histEvents|histTLS|histDKIM) == 0 &&
		idLen > 0 && n > 0 && n <= maxRecipients && size >= int64(prefixLen)
	return created, ok
}

// shapeRecipient reads one recipient as recipient does, returning its
// status and address; false (r failed) where recipient or validate would
// refuse it.
func (r *histReader) shapeRecipient() (Status, []byte, bool) {
	st := int(r.Byte())
	flags := r.Byte()
	if st >= len(recordStatuses) || flags&^(rcptWarned|rcptReportFailed|rcptReportDelayed) != 0 ||
		flags&(rcptReportFailed|rcptReportDelayed) == rcptReportFailed|rcptReportDelayed {
		r.Fail()
		return "", nil, false
	}
	if att := r.Varint(); att < math.MinInt32 || att > math.MaxInt32 {
		r.Fail()
	}
	r.Varint() // next_attempt
	r.Varint() // last_attempt
	for range r.Count() {
		r.skipString() // notify
	}
	addr := r.Bytes()
	r.skipString() // orcpt
	r.skipString() // last_reply
	r.skipString() // remote_mta
	status := recordStatuses[st]
	if st == len(recordStatuses)-1 {
		// Spelled out: one the table lacks, and validate's only such
		// status is scheduled.
		if string(r.Bytes()) != string(StatusScheduled) {
			r.Fail()
		}
		status = StatusScheduled
	}
	if len(addr) == 0 {
		r.Fail()
	}
	return status, addr, r.Err() == nil
}

// skipped skips a string and returns its length.
func (r *histReader) skipped() int {
	return len(r.Bytes())
}
