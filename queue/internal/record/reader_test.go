package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"
)

// Each read fails on the bytes that cannot hold it, leaves the Reader
// failed, and every later read gives the zero value.
func TestReaderFailures(t *testing.T) {
	overlong := bytes.Repeat([]byte{0xff}, binary.MaxVarintLen64+1)
	for _, tc := range []struct {
		name string
		in   []byte
		read func(r *Reader) any
	}{
		{"byte of nothing", nil, func(r *Reader) any { return r.Byte() }},
		{"uvarint of nothing", nil, func(r *Reader) any { return r.Uvarint() }},
		{"uvarint cut short", []byte{0x80}, func(r *Reader) any { return r.Uvarint() }},
		{"uvarint overflowing", overlong, func(r *Reader) any { return r.Uvarint() }},
		{"varint cut short", []byte{0x80, 0x80}, func(r *Reader) any { return r.Varint() }},
		{"varint overflowing", overlong, func(r *Reader) any { return r.Varint() }},
		{"count beyond the bytes", []byte{3, 1, 2}, func(r *Reader) any { return r.Count() }},
		{"string beyond the bytes", []byte{4, 'a', 'b', 'c'}, func(r *Reader) any { return r.Str() }},
		{"bytes with a huge length", binary.AppendUvarint(nil, math.MaxUint64), func(r *Reader) any { return r.Bytes() }},
		{"take beyond the bytes", []byte{1}, func(r *Reader) any { return r.Take(2) }},
		{"time cut short", []byte{0x80}, func(r *Reader) any { return r.Time() }},
		{"millis cut short", []byte{0x80}, func(r *Reader) any { return r.Millis() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(tc.in)
			got := tc.read(&r)
			if !errors.Is(r.Err(), ErrDamaged) || !errors.Is(r.End(), ErrDamaged) {
				t.Fatalf("Err %v, End %v after a failed read; want ErrDamaged", r.Err(), r.End())
			}
			if !isZero(got) {
				t.Errorf("failed read gave %#v, want the zero value", got)
			}
			if r.Len() != 0 {
				t.Errorf("Len %d after a failure, want 0", r.Len())
			}
			r2 := NewReader(append(tc.in[:len(tc.in):len(tc.in)], 7))
			tc.read(&r2)
			if r2.Err() == nil {
				return // the extra byte completed it; the sticking is what is checked below
			}
			if b := r2.Byte(); b != 0 || r2.Err() == nil {
				t.Errorf("after a failure Byte gave %d, Err %v; want 0 and the failure kept", b, r2.Err())
			}
		})
	}
}

func isZero(v any) bool {
	switch v := v.(type) {
	case []byte:
		return v == nil
	case time.Time:
		return v.IsZero()
	default:
		return v == 0 || v == "" || v == byte(0) || v == uint64(0) || v == int64(0)
	}
}

// End tells a record read whole from one with bytes left over.
func TestReaderEnd(t *testing.T) {
	r := NewReader([]byte{1, 2})
	if r.Byte(); r.End() == nil || r.Err() != nil {
		t.Fatalf("one byte left: End %v, Err %v; want ErrDamaged, nil", r.End(), r.Err())
	}
	if r.Byte(); r.End() != nil {
		t.Fatalf("all read: End %v, want nil", r.End())
	}
}

// The encodings are the on-disk format: pin the bytes of each.
func TestWrittenBytes(t *testing.T) {
	at := time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)
	for _, tc := range []struct {
		name      string
		got, want []byte
	}{
		{"str", AppendStr(nil, "ab"), []byte{2, 'a', 'b'}},
		{"bytes", AppendBytes([]byte{9}, []byte{0xff}), []byte{9, 1, 0xff}},
		{"zero time", AppendTime(nil, time.Time{}), binary.AppendVarint(nil, math.MinInt64)},
		{"time", AppendTime(nil, at), binary.AppendVarint(nil, at.UnixNano())},
		{"zero millis", AppendMillis(nil, time.Time{}), []byte{0}},
		{"millis before 1970", AppendMillis(nil, time.Unix(-5, 0)), []byte{0}},
		{"millis", AppendMillis(nil, at), binary.AppendUvarint(nil, uint64(at.UnixMilli()))},
	} {
		if !bytes.Equal(tc.got, tc.want) {
			t.Errorf("%s: % x, want % x", tc.name, tc.got, tc.want)
		}
	}
}

// FuzzReader: any bytes, read by any sequence of reads, never panic; a
// failure sticks; the bytes left never grow; and a result never reaches
// past the input.
func FuzzReader(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, []byte{2, 0x80, 'a', 'b'})
	f.Add([]byte{3, 3, 4, 7}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{5, 6, 8}, binary.AppendUvarint(nil, math.MaxUint64))
	f.Fuzz(func(t *testing.T, ops, data []byte) {
		r := NewReader(data)
		failed := false
		for _, op := range ops {
			before := r.Len()
			var n int // the most bytes the result may hold
			switch op % 12 {
			case 0:
				r.Byte()
			case 1:
				r.Uvarint()
			case 2:
				r.Varint()
			case 3:
				if c := r.Count(); c > before {
					t.Fatalf("Count %d with %d bytes", c, before)
				}
			case 4:
				n = len(r.Bytes())
			case 5:
				n = len(r.Str())
			case 6:
				n = len(r.Take(uint64(op >> 4)))
			case 7:
				r.SkipBytes()
			case 8:
				r.Time()
			case 9:
				r.Millis()
			case 10:
				r.Skip(uint64(op >> 4))
			case 11:
				_ = r.End()
			}
			if n > before {
				t.Fatalf("op %d gave %d bytes of %d", op%12, n, before)
			}
			if r.Len() > before {
				t.Fatalf("op %d: %d bytes left, %d before", op%12, r.Len(), before)
			}
			if failed && r.Err() == nil {
				t.Fatalf("op %d cleared a failure", op%12)
			}
			failed = r.Err() != nil
		}
	})
}

// FuzzRoundTrip: what the append helpers write, a Reader reads back,
// ending exactly at the last field.
func FuzzRoundTrip(f *testing.F) {
	f.Add(byte(7), uint64(300), int64(-1), "from@example.org", []byte{0, 1}, int64(1714564800123456789), int64(1714564800123))
	f.Add(byte(0), uint64(math.MaxUint64), int64(math.MinInt64), "", []byte(nil), int64(math.MinInt64), int64(0))
	f.Fuzz(func(t *testing.T, c byte, u uint64, i int64, s string, p []byte, ns, ms int64) {
		at := TimeOf(ns)
		atMs := time.UnixMilli(ms).UTC()
		b := append([]byte{}, c)
		b = binary.AppendUvarint(b, u)
		b = binary.AppendVarint(b, i)
		b = AppendStr(b, s)
		b = AppendBytes(b, p)
		b = append(binary.AppendUvarint(b, uint64(len(p))), p...)
		b = AppendTime(b, at)
		b = AppendMillis(b, atMs)
		r := NewReader(b)
		gc, gu, gi, gs, gp := r.Byte(), r.Uvarint(), r.Varint(), r.Str(), r.Bytes()
		gn := r.Count()
		gq := r.Take(uint64(gn))
		gt, gm := r.Time(), r.Millis()
		if err := r.End(); err != nil {
			t.Fatalf("End: %v", err)
		}
		if gc != c || gu != u || gi != i || gs != s || !bytes.Equal(gp, p) || !gt.Equal(at) {
			t.Fatalf("read back %v %v %v %q %x %v, wrote %v %v %v %q %x %v", gc, gu, gi, gs, gp, gt, c, u, i, s, p, at)
		}
		if gn != len(p) || !bytes.Equal(gq, p) {
			t.Fatalf("count %d and %x, wrote %d and %x", gn, gq, len(p), p)
		}
		if want := FromMillis(Millis(atMs)); !gm.Equal(want) {
			t.Fatalf("millis read back %v, want %v", gm, want)
		}
	})
}
