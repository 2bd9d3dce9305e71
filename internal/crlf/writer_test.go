package crlf

import (
	"bytes"
	"strings"
	"testing"
)

// normalised is the normalisation Writer must perform, written the obvious
// way for comparison.
func normalised(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.ReplaceAll(s, "\n", "\r\n")
}

func FuzzWriter(f *testing.F) {
	for _, s := range []string{"", "a\r\nb", "a\rb\nc", "\r", "\n", "\r\r\n", "\n\r", "x\r\n.\r\n"} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		var out bytes.Buffer
		w := NewWriter(&out)
		n := int(chunk%16) + 1
		for i := 0; i < len(in); i += n {
			end := min(i+n, len(in))
			if _, err := w.Write(in[i:end]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if want := normalised(string(in)); got != want {
			t.Fatalf("Writer(%q) = %q, want %q", in, got, want)
		}
		if strings.Count(got, "\r") != strings.Count(got, "\r\n") || strings.Count(got, "\n") != strings.Count(got, "\r\n") {
			t.Fatalf("bare CR or LF in %q", got)
		}
	})
}
