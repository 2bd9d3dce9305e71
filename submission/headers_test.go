package submission

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// FuzzHeaderScan: whatever the bytes and however they are split, the scan
// passes every byte on unchanged when it adds nothing, and with add set it
// only ever inserts whole header lines.
func FuzzHeaderScan(f *testing.F) {
	f.Add([]byte("Subject: a\r\nMessage-ID: <x@y>\r\n\r\nbody\r\n"), uint8(3))
	f.Add([]byte("\r\nbody"), uint8(1))
	f.Add([]byte("Subject: a\r\n b\r\n"), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, split uint8) {
		for _, add := range []bool{false, true} {
			var out bytes.Buffer
			h := &headerScan{w: &out}
			if add {
				h.add = func() (string, time.Time) { return "<id@host>", time.Unix(0, 0).UTC() }
			}
			n := int(split)%8 + 1
			for p := in; len(p) > 0; {
				k := min(n, len(p))
				if w, err := h.Write(p[:k]); err != nil || w != k {
					t.Fatalf("Write = %d, %v", w, err)
				}
				p = p[k:]
			}
			if err := h.finish(); err != nil {
				t.Fatal(err)
			}
			if !add && !bytes.Equal(out.Bytes(), in) {
				t.Fatalf("changed without add:\n%q\n%q", in, out.Bytes())
			}
			if add {
				got := out.String()
				for _, l := range []string{"Message-ID: <id@host>\r\n", "Date: Thu, 01 Jan 1970 00:00:00 +0000\r\n"} {
					got = strings.Replace(got, l, "", 1)
				}
				if got != string(in) {
					t.Fatalf("more than whole header lines added:\n%q\n%q", in, out.Bytes())
				}
			}
		}
	})
}
