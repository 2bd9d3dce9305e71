package queue

import (
	"bytes"
	"io"
	"testing"
)

// A draft reads back exactly what was written to it, whether it is still
// held in memory or partly spilled to disk.
func TestDraftContents(t *testing.T) {
	s, err := Open(t.TempDir()+"/q.db", Options{InlineLimit: 64, ChunkSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, n := range []int{0, 10, 64, 65, 250, 300} {
		d := s.NewDraft()
		want := bytes.Repeat([]byte("0123456789abcdefghij"), n/20+1)[:n]
		for p := want; len(p) > 0; p = p[min(7, len(p)):] {
			if _, err := d.Write(p[:min(7, len(p))]); err != nil {
				t.Fatal(err)
			}
		}
		r, err := d.Contents()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%d bytes: read back %d bytes, err %v", n, len(got), err)
		}
		if err := d.Abort(); err != nil {
			t.Fatal(err)
		}
	}
}
