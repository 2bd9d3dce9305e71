package mime7bit

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// The re-encoded form of testdata/longlines/*.eml, byte for byte: parts
// with a line over 998 octets become quoted-printable (text) or base64,
// the other parts, the header and the boundaries stay as they were.
func TestGoldenLongLines(t *testing.T) {
	scan := func(r io.Reader) (Plan, error) { return ScanLongLines(iotest.OneByteReader(r)) }
	checkGolden(t, "testdata/longlines/*.eml", scan, func(t *testing.T, out []byte) {
		for i, line := range strings.Split(string(out), "\r\n") {
			if len(line) > MaxLineOctets {
				t.Errorf("line %d still has %d octets", i+1, len(line))
			}
		}
	})
}

func TestScanLongLines(t *testing.T) {
	long := strings.Repeat("a", 999)
	cases := []struct {
		name   string
		msg    string
		needed bool
		refuse bool
	}{
		{"998 octets", "Subject: x\r\n\r\n" + long[:998] + "\r\n", false, false},
		{"999 octets", "Subject: x\r\n\r\n" + long + "\r\n", true, false},
		{"999 octets unterminated", "Subject: x\r\n\r\n" + long, true, false},
		{"998 octets and a bare CR", "Subject: x\r\n\r\n" + long[:998] + "\r\r\n", true, false},
		{"header line", "Subject: " + long + "\r\n\r\nbody\r\n", false, true},
		{"folded header, short lines", "Subject: " + long[:500] + "\r\n " + long[:500] + "\r\n\r\n" + long + "\r\n", true, false},
		{"declared quoted-printable", "Content-Transfer-Encoding: quoted-printable\r\n\r\n" + long + "\r\n", false, true},
		{"signed", "Content-Type: multipart/signed; boundary=s\r\n\r\n--s\r\n\r\n" + long + "\r\n--s--\r\n", false, true},
		{"short lines, 8-bit", "Subject: x\r\n\r\nGr\xc3\xbc\xc3\x9fe\r\n", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ScanLongLines(iotest.HalfReader(strings.NewReader(c.msg)))
			if c.refuse != (err != nil) || err != nil && !errors.Is(err, ErrUnconvertible) {
				t.Fatalf("err = %v, want refused %v", err, c.refuse)
			}
			if p.Needed() != c.needed {
				t.Errorf("Needed = %v, want %v", p.Needed(), c.needed)
			}
		})
	}
}

func FuzzLongLines(f *testing.F) {
	long := strings.Repeat("l", 1000)
	f.Add(crlfs("Subject: x\n\n" + long + "\n"))
	f.Add(crlfs("Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/html\n\n" + long + "\n--b\nContent-Type: image/png\n\n\x89PNG" + long + "\n--b--\n"))
	f.Add(crlfs("Content-Type: message/rfc822\n\nSubject: y\n\n\xe2\x82\xac" + long + "\n"))
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ScanLongLines(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrUnconvertible) {
				t.Fatalf("ScanLongLines error not ErrUnconvertible: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := p.Convert(&out, strings.NewReader(in)); err != nil {
			t.Fatalf("Convert after a clean scan: %v", err)
		}
		if !p.Needed() {
			if out.String() != in {
				t.Fatal("a message needing nothing was changed")
			}
			return
		}
		if !cleanCRLF(in) {
			return // relayq stores only CRLF line ends
		}
		for i, line := range strings.Split(out.String(), "\r\n") {
			if len(line) > MaxLineOctets {
				t.Fatalf("line %d has %d octets:\n%q", i+1, len(line), out.String())
			}
		}
		got, want := fuzzLeaves(out.String()), fuzzLeaves(in)
		if !slices.Equal(got, want) {
			t.Fatalf("leaves differ:\n got %q\nwant %q", got, want)
		}
	})
}
