package mime7bit

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/emersion/go-message"
)

func crlfs(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

func convert(t *testing.T, in string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := Convert(&out, func() (io.Reader, error) { return strings.NewReader(in), nil })
	return out.String(), err
}

// part is one decoded leaf: its media type and body after transfer decoding.
type part struct {
	Type string
	Body string
}

// leaves decodes a message with go-message and lists its leaves in order,
// going into attached messages (which go-message leaves whole).
func leaves(t testing.TB, msg string) []part {
	t.Helper()
	out, err := decodeLeaves(strings.NewReader(msg), "", 0)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return out
}

func decodeLeaves(r io.Reader, parent string, depth int) ([]part, error) {
	e, err := message.Read(r)
	if err != nil && !message.IsUnknownCharset(err) {
		return nil, err
	}
	return decodeEntity(e, parent, depth)
}

func decodeEntity(e *message.Entity, parent string, depth int) ([]part, error) {
	if depth > 40 {
		return nil, errors.New("too deep")
	}
	mt, _, _ := e.Header.ContentType()
	if !e.Header.Has("Content-Type") && parent == "multipart/digest" {
		mt = "message/rfc822"
	}
	if mr := e.MultipartReader(); mr != nil {
		var out []part
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				return out, nil
			}
			if err != nil && !message.IsUnknownCharset(err) {
				return nil, err
			}
			sub, err := decodeEntity(p, mt, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
	}
	if mt == "message/rfc822" && isIdentity(e.Header.Header) {
		return decodeLeaves(e.Body, "", depth+1)
	}
	b, err := io.ReadAll(e.Body)
	if err != nil {
		return nil, err
	}
	return []part{{Type: mt, Body: string(b)}}, nil
}

func is7Bit(s string) bool { return !has8Bit([]byte(s)) }

func TestConvertKeepsStructureAndContent(t *testing.T) {
	cases := []struct {
		name, in  string
		wantEnc   []string // Content-Transfer-Encoding that must appear
		wantTypes []string
	}{
		{
			name:    "plain text without MIME headers",
			in:      crlfs("From: a@example.com\nSubject: hi\n\nGrüße aus Köln\nzweite Zeile\n"),
			wantEnc: []string{"quoted-printable"}, wantTypes: []string{"text/plain"},
		},
		{
			name: "multipart with 8-bit text and binary attachment",
			in: crlfs("From: a@example.com\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b1\"\n\npreamble\n--b1\n" +
				"Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\nnaïve café\n--b1\n" +
				"Content-Type: text/plain\n\nplain ascii stays\n--b1\n" +
				"Content-Type: application/octet-stream\nContent-Transfer-Encoding: binary\n\n\xff\xfe\x00\x80raw\n--b1--\n"),
			wantEnc:   []string{"quoted-printable", "base64"},
			wantTypes: []string{"text/plain", "text/plain", "application/octet-stream"},
		},
		{
			name: "nested alternative and attached message",
			in: crlfs("From: a@example.com\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=outer\n\n--outer\n" +
				"Content-Type: multipart/alternative; boundary=inner\n\n--inner\nContent-Type: text/plain; charset=utf-8\n\nÄpfel\n--inner\n" +
				"Content-Type: text/html; charset=utf-8\n\n<p>Äpfel</p>\n--inner--\n--outer\nContent-Type: message/rfc822\nContent-Transfer-Encoding: 8bit\n\n" +
				"From: b@example.com\nSubject: fwd\nContent-Type: text/plain; charset=utf-8\n\nBirnen: ½ kg\n--outer--\n"),
			wantEnc:   []string{"quoted-printable"},
			wantTypes: []string{"text/plain", "text/html", "text/plain"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := convert(t, c.in)
			if err != nil {
				t.Fatalf("convert: %v", err)
			}
			if !is7Bit(out) {
				t.Fatalf("output has 8-bit bytes:\n%s", out)
			}
			for _, enc := range c.wantEnc {
				if !strings.Contains(strings.ToLower(out), "content-transfer-encoding: "+enc) {
					t.Errorf("no %s part in:\n%s", enc, out)
				}
			}
			got, want := leaves(t, out), leaves(t, c.in)
			if len(got) != len(want) || len(got) != len(c.wantTypes) {
				t.Fatalf("leaves: got %d, want %d (%v)\n%s", len(got), len(want), c.wantTypes, out)
			}
			for i := range got {
				if got[i] != want[i] || got[i].Type != c.wantTypes[i] {
					t.Errorf("leaf %d: got %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
}

func TestConvertNamesCharsetOfBareText(t *testing.T) {
	out, err := convert(t, crlfs("Subject: x\n\nGrüße\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Content-Type: text/plain; charset=utf-8\r\n") || !strings.Contains(out, "MIME-Version: 1.0\r\n") {
		t.Errorf("no MIME headers for UTF-8 text:\n%s", out)
	}
	out, err = convert(t, crlfs("Subject: x\n\nGr\xfc\xdfe\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "charset=unknown-8bit") {
		t.Errorf("Latin-1 text not labelled unknown-8bit:\n%s", out)
	}
}

func TestSevenBitMessageNeedsNothing(t *testing.T) {
	for _, in := range []string{
		crlfs("Subject: x\n\nhello\n"),
		crlfs("Content-Type: multipart/mixed; boundary=b\n\n--b\nbroken, never closed\n"),
		crlfs("Content-Type: multipart/signed; boundary=b\n\n--b\n\nsigned\n--b--\n"),
	} {
		p, err := Scan(strings.NewReader(in))
		if err != nil || p.Needed() {
			t.Errorf("Scan(%q) = %v, %v; want nothing needed", in, p.Needed(), err)
		}
	}
}

func TestUnconvertible(t *testing.T) {
	for name, in := range map[string]string{
		"8-bit header": crlfs("Subject: Grüße\n\nbody\n"),
		"signed": crlfs("Content-Type: multipart/signed; boundary=b; protocol=\"application/pgp-signature\"\n\n--b\n" +
			"Content-Type: text/plain\nContent-Transfer-Encoding: 8bit\n\nGrüße\n--b\nContent-Type: application/pgp-signature\n\nsig\n--b--\n"),
		"8-bit in base64 part": crlfs("Content-Type: application/pdf\nContent-Transfer-Encoding: base64\n\n\xff\xff\n"),
		"unclosed multipart":   crlfs("Content-Type: multipart/mixed; boundary=b\n\n--b\n\nGrüße\n"),
		"no boundary":          crlfs("Content-Type: multipart/mixed\n\nGrüße\n"),
		"part header 8-bit":    crlfs("Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Disposition: attachment; filename=\"ä.txt\"\n\nx\n--b--\n"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Scan(strings.NewReader(in))
			if !errors.Is(err, ErrUnconvertible) {
				t.Fatalf("Scan = %v, want ErrUnconvertible", err)
			}
		})
	}
}

// FuzzConvert: any input either converts to 7-bit output whose leaves decode
// to the same bytes as the input's, or is refused with ErrUnconvertible;
// nothing panics.
func FuzzConvert(f *testing.F) {
	f.Add(crlfs("Subject: x\n\nGrüße\n"))
	f.Add(crlfs("Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nä\n--b\nContent-Type: image/png\n\n\x89PNG\n--b--\n"))
	f.Add(crlfs("Content-Type: message/rfc822\n\nSubject: y\n\n\xe2\x82\xac\n"))
	f.Add(crlfs("Content-Type: multipart/digest; boundary=d\n\n--d\n\nSubject: z\n\n\xc3\xa9\n--d--\n"))
	f.Fuzz(func(t *testing.T, in string) {
		p, err := Scan(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrUnconvertible) {
				t.Fatalf("Scan error not ErrUnconvertible: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := p.Convert(&out, strings.NewReader(in)); err != nil {
			t.Fatalf("Convert after a clean Scan: %v", err)
		}
		if !p.Needed() {
			if out.String() != in {
				t.Fatal("a message needing nothing was changed")
			}
			return
		}
		if !is7Bit(out.String()) {
			t.Fatalf("8-bit output:\n%q", out.String())
		}
		if !cleanCRLF(in) {
			return // relayq stores only CRLF line ends; QP may normalise others
		}
		got, want, ok := fuzzLeaves(out.String()), fuzzLeaves(in), true
		if len(got) != len(want) {
			ok = false
		}
		for i := 0; ok && i < len(got); i++ {
			ok = got[i] == want[i]
		}
		if !ok {
			t.Fatalf("leaves differ:\n got %q\nwant %q\nout %q", got, want, out.String())
		}
	})
}

// cleanCRLF: every CR and LF is part of a CRLF.
func cleanCRLF(s string) bool {
	return strings.Count(s, "\r") == strings.Count(s, "\r\n") && strings.Count(s, "\n") == strings.Count(s, "\r\n")
}

// fuzzLeaves decodes leaves as leaves does, or says why it could not.
func fuzzLeaves(msg string) []part {
	out, err := decodeLeaves(strings.NewReader(msg), "", 0)
	if err != nil {
		return []part{{Type: "error"}}
	}
	return out
}
