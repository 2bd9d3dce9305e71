package record

import (
	"encoding/binary"
	"math"
	"time"
)

// AppendBytes appends p as Reader.Bytes reads it: its uvarint length,
// then its bytes.
func AppendBytes(b, p []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(p))), p...)
}

// AppendStr appends s as Reader.Str reads it.
func AppendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// AppendTime appends t as Reader.Time reads it: varint Unix nanoseconds,
// math.MinInt64 for the zero time. A time outside the nanoseconds'
// range does not come back.
func AppendTime(b []byte, t time.Time) []byte { return binary.AppendVarint(b, Nanos(t)) }

// AppendMillis appends t as Reader.Millis reads it: uvarint Unix
// milliseconds, 0 for the zero time or any time not after 1970.
func AppendMillis(b []byte, t time.Time) []byte { return binary.AppendUvarint(b, Millis(t)) }

// Nanos is t in Unix nanoseconds, math.MinInt64 for the zero time.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

// TimeOf is the UTC time Nanos gave n.
func TimeOf(n int64) time.Time {
	if n == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Millis is t in Unix milliseconds, 0 for the zero time or any time not
// after 1970 (milliseconds are kept; the rest is dropped).
func Millis(t time.Time) uint64 {
	if t.IsZero() || t.UnixMilli() <= 0 {
		return 0
	}
	return uint64(t.UnixMilli())
}

// FromMillis is the UTC time Millis gave n: the zero time for 0 and for
// values no time gives.
func FromMillis(n uint64) time.Time {
	if n == 0 || n > 1<<62 {
		return time.Time{}
	}
	return time.UnixMilli(int64(n)).UTC()
}
