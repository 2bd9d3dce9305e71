package crlf

import (
	"bytes"
	"testing"
)

// slow is the obvious byte-at-a-time definition Clean must agree with.
func slow(p []byte, pendingCR bool) (bool, bool) {
	cr := pendingCR
	for _, b := range p {
		switch {
		case cr && b != '\n':
			return false, false
		case !cr && b == '\n':
			return false, false
		}
		cr = b == '\r'
	}
	return true, cr
}

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		in        string
		pending   bool
		ok, endCR bool
	}{
		{"", false, true, false},
		{"", true, true, true},
		{"a\r\nb\r\n", false, true, false},
		{"a\r\nb\r", false, true, true},
		{"\nb\r\n", true, true, false},
		{"b\r\n", true, false, false},
		{"a\nb", false, false, false},
		{"a\rb", false, false, false},
		{"a\r\r\n", false, false, false},
		{"\n", false, false, false},
		{"\r", false, true, true},
		{"\r\n\r\n.\r\n", false, true, false},
		{"hi\n.\nMAIL FROM:<x>\r\n", false, false, false},
		{"a\r\n.\nb\r\n", false, false, false},
	} {
		ok, end := Clean([]byte(tc.in), tc.pending)
		if ok != tc.ok || (ok && end != tc.endCR) {
			t.Errorf("Clean(%q, %v) = %v, %v; want %v, %v", tc.in, tc.pending, ok, end, tc.ok, tc.endCR)
		}
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"a\r\nb", "\r", "\n", "x\r\r\n", "\r\n.\n", ""} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, p []byte, pending bool) {
		ok, end := Clean(p, pending)
		wok, wend := slow(p, pending)
		if ok != wok || (ok && end != wend) {
			t.Fatalf("Clean(%q, %v) = %v %v, byte-wise check says %v %v", p, pending, ok, end, wok, wend)
		}
	})
}

func BenchmarkClean20KiB(b *testing.B) {
	p := bytes.Repeat([]byte("0123456789012345678901234567890123456789012345678901234567890123456789012\r\n"), 20<<10/75)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		Clean(p, false)
	}
}
