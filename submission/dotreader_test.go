package submission

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"strings"
	"testing"
	"testing/iotest"
)

// refDotBody is the reference for dotBody: the same rules, one byte at a
// time, over the whole stream. It returns the unstuffed body, what is left
// after it (starting with the end marker) and the verdict.
func refDotBody(in []byte, limit int64) (body, rest []byte, err error) {
	lineStart, bad := true, false
	for i := 0; i < len(in); i++ {
		c := in[i]
		if lineStart && c == '.' {
			if bytes.HasPrefix(in[i:], []byte(".\r\n")) {
				switch {
				case int64(len(body)) > limit:
					return body, in[i:], errTooBigFound
				case bad:
					return body, in[i:], errBareNewlineFound
				}
				return body, in[i:], nil
			}
			lineStart = false
			continue // a stuffed dot
		}
		lineStart = false
		switch c {
		case '\r':
			if i+1 < len(in) && in[i+1] != '\n' {
				bad = true
			}
		case '\n':
			if len(body) == 0 || body[len(body)-1] != '\r' {
				bad = true
			} else {
				lineStart = true
			}
		}
		body = append(body, c)
	}
	return body, nil, io.ErrUnexpectedEOF
}

// bufSource is a bodySource over a bufio.Reader's buffer, filling it when
// needed: go-smtp's raw DATA reader without the connection below it.
type bufSource struct{ br *bufio.Reader }

func (b bufSource) PeekRaw(n int) ([]byte, error) {
	if b.br.Buffered() < n {
		if _, err := b.br.Peek(n); err != nil {
			return nil, err
		}
	}
	return b.br.Peek(b.br.Buffered())
}

func (b bufSource) DiscardRaw(n int) { _, _ = b.br.Discard(n) }

func verdict(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, errTooBigFound):
		return "size"
	case errors.Is(err, errBareNewlineFound):
		return "bare newline"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	}
	return err.Error()
}

// checkDotBody runs dotBody over in through readers that cut the stream at
// different places, with 0 to 16 bytes already buffered, and checks each
// against refDotBody: verdict, body, and the stream left after it, end
// marker first. (go-smtp's raw reader, which dotBody reads in the server,
// is checked to pass the stream on unchanged in internal/gosmtp.)
func checkDotBody(t *testing.T, in []byte, limit int64) {
	t.Helper()
	wantBody, wantRest, wantErr := refDotBody(in, limit)
	readers := map[string]func() io.Reader{
		"whole":      func() io.Reader { return bytes.NewReader(in) },
		"small":      func() io.Reader { return bufio.NewReaderSize(bytes.NewReader(in), 16) },
		"one byte":   func() io.Reader { return iotest.OneByteReader(bytes.NewReader(in)) },
		"half bytes": func() io.Reader { return iotest.HalfReader(bytes.NewReader(in)) },
	}
	for name, mk := range readers {
		for _, preload := range []int{0, 2, 5, 16} {
			br := bufio.NewReaderSize(mk(), 16)
			if preload > 0 {
				_, _ = br.Peek(min(preload, len(in)))
			}
			var got bytes.Buffer
			n, err := dotBody(bufSource{br}, &got, limit)
			label := fmt.Sprintf("%s, %d buffered", name, preload)
			if verdict(err) != verdict(wantErr) {
				t.Fatalf("%s: %q: verdict %q, reference %q", label, in, verdict(err), verdict(wantErr))
			}
			if wantErr != nil && !errors.Is(wantErr, errTooBigFound) && !errors.Is(wantErr, errBareNewlineFound) {
				continue
			}
			if wantErr == nil && (n != int64(len(wantBody)) || !bytes.Equal(got.Bytes(), wantBody)) {
				t.Fatalf("%s: %q: body %q (n=%d), reference %q", label, in, got.Bytes(), n, wantBody)
			}
			if left, _ := io.ReadAll(br); !bytes.Equal(left, wantRest) {
				t.Fatalf("%s: %q: left %q unread, reference %q", label, in, left, wantRest)
			}
		}
	}
	// For CRLF-clean input the standard library's dot reader must agree on
	// the body (it turns CRLF into LF) and on where DATA ends.
	if wantErr == nil {
		tr := textproto.NewReader(bufio.NewReader(bytes.NewReader(in)))
		b, err := io.ReadAll(tr.DotReader())
		if err != nil {
			t.Fatalf("%q: textproto: %v", in, err)
		}
		if want := bytes.ReplaceAll(wantBody, []byte("\r\n"), []byte("\n")); !bytes.Equal(b, want) {
			t.Fatalf("%q: textproto read %q, dotBody %q", in, b, wantBody)
		}
		rest, _ := io.ReadAll(tr.R)
		if !bytes.Equal(rest, wantRest[3:]) {
			t.Fatalf("%q: textproto left %q, dotBody %q", in, rest, wantRest[3:])
		}
	}
}

func TestDotBody(t *testing.T) {
	for _, tc := range []struct {
		in, body, rest, verdict string
	}{
		{".\r\n", "", ".\r\n", "ok"},
		{"a\r\n.\r\nQUIT\r\n", "a\r\n", ".\r\nQUIT\r\n", "ok"},
		{"..\r\n.\r\n", ".\r\n", ".\r\n", "ok"},
		{"a\r\n..b\r\n.\r\n", "a\r\n.b\r\n", ".\r\n", "ok"},
		{"a.\r\n.\r\n", "a.\r\n", ".\r\n", "ok"},
		{"hello\r\n.\rMAIL FROM:<e@x>\r\n.\r\n", "", "", "bare newline"}, // go-smtp's reader would drop ".\r"
		{"a\n.\r\nb\r\n.\r\n", "", "", "bare newline"},                   // LF.CRLF does not end DATA
		{"a\r.\r\nb\r\n.\r\n", "", "", "bare newline"},
		{"a\r\r\n.\r\nMAIL\r\n", "", "", "bare newline"}, // CRLF.CRLF after a bare CR ends DATA
		{".\n\r\n.\r\n", "", "", "bare newline"},
		{"abcdefghijabcdefghijabcdefghij\r\n.\r\n", "", "", "size"},
		{"abc\n\r\nabcdefghijabcdefghijabcdefghij\r\n.\r\n", "", "", "size"}, // size wins
		{"a\r\n.\r", "", "", "eof"},
		{"a\r\n", "", "", "eof"},
		{"", "", "", "eof"},
	} {
		var got bytes.Buffer
		br := bufio.NewReaderSize(strings.NewReader(tc.in), 16)
		_, err := dotBody(bufSource{br}, &got, 30)
		if verdict(err) != tc.verdict {
			t.Errorf("%q: %q, want %q", tc.in, verdict(err), tc.verdict)
			continue
		}
		if err == nil {
			rest, _ := io.ReadAll(br)
			if got.String() != tc.body || string(rest) != tc.rest {
				t.Errorf("%q: body %q rest %q, want %q %q", tc.in, got.String(), rest, tc.body, tc.rest)
			}
		}
		checkDotBody(t, []byte(tc.in), 30)
	}
}

// FuzzDotBody compares dotBody with the byte-at-a-time reference and, on
// CRLF-clean input, with net/textproto's dot reader.
func FuzzDotBody(f *testing.F) {
	for _, s := range []string{
		".\r\n", "a\r\n.\r\n", "..\r\n.\r\n", "a\r\n.\rb\r\n.\r\n", "a\n.\nb\r\n.\r\n",
		"x\r\r\n.\r\n", strings.Repeat("0123456789abcdef\r\n", 5) + ".\r\nNOOP\r\n",
	} {
		f.Add([]byte(s), uint16(64))
	}
	f.Fuzz(func(t *testing.T, in []byte, limit uint16) {
		checkDotBody(t, in, int64(limit))
	})
}

func TestDotBodyWriteFailure(t *testing.T) {
	br := bufio.NewReader(strings.NewReader("a\r\nb\r\n.\r\nQUIT\r\n"))
	_, err := dotBody(bufSource{br}, failWriter{}, 100)
	if !errors.Is(err, errWriteFailed) {
		t.Fatalf("got %v, want errWriteFailed", err)
	}
	if rest, _ := io.ReadAll(br); string(rest) != ".\r\nQUIT\r\n" {
		t.Fatalf("after a write failure %q left unread, want the end marker and the next command", rest)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
