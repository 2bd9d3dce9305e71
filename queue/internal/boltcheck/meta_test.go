package boltcheck

import (
	"encoding/binary"
	"testing"
)

func FuzzParseMeta(f *testing.F) {
	good := make([]byte, metaSize)
	ne := binary.NativeEndian
	ne.PutUint32(good[metaHeader:], metaMagic)
	ne.PutUint32(good[metaHeader+4:], metaVersion)
	ne.PutUint32(good[metaHeader+8:], 4096)
	ne.PutUint64(good[metaHeader+32:], 2)
	ne.PutUint64(good[metaHeader+40:], 4)
	f.Add(good)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMeta(b)
		if err != nil {
			return
		}
		if m.pageSize < 512 || m.pgid < 4 || m.freelist != pgidNoFreelist && m.freelist >= m.pgid {
			t.Fatalf("accepted an implausible meta page: %+v", m)
		}
	})
}
