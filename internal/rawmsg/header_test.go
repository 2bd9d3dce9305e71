package rawmsg

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/emersion/go-message/mail"
)

func readAll(t testing.TB, in string) (*Header, string) {
	t.Helper()
	r := bufio.NewReader(strings.NewReader(in))
	h, err := ReadHeader(r, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(h.Reader(r))
	if err != nil {
		t.Fatal(err)
	}
	return h, string(b)
}

func TestCRLFMessagePassesUnchanged(t *testing.T) {
	in := "From: A <a@example.org>\r\nTo: b@example.net,\r\n c@example.net\r\nSubject: hi\r\n\r\nbody\r\nline\r\n"
	_, out := readAll(t, in)
	if out != in {
		t.Fatalf("got %q, want it unchanged", out)
	}
}

func TestBareLFBecomesCRLF(t *testing.T) {
	_, out := readAll(t, "To: a@x\nSubject: s\n\nbody\nmore\n")
	if want := "To: a@x\r\nSubject: s\r\n\r\nbody\r\nmore\r\n"; out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
}

func TestRecipientsAndBccRemoval(t *testing.T) {
	h, _ := readAll(t, "To: \"Zoë\" <a@x.test>, b@x.test\r\nCc: =?utf-8?q?J=C3=BCrgen?= <c@x.test>\r\nBcc: hidden@x.test\r\nbcc: two@x.test\r\n\r\nbody\r\n")
	got, err := h.Addresses("To", "Cc", "Bcc")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "a@x.test b@x.test c@x.test hidden@x.test two@x.test" {
		t.Fatalf("recipients %v", got)
	}
	h.Remove("Bcc")
	var b bytes.Buffer
	h.WriteTo(&b)
	if strings.Contains(strings.ToLower(b.String()), "bcc") || strings.Contains(b.String(), "hidden") {
		t.Fatalf("Bcc left in %q", b.String())
	}
}

func TestCompleteAddsOnlyWhatIsMissing(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, in   string
		from       string
		wantAdded  []string
		wantAbsent []string
	}{
		{"bare", "To: a@x\n\nb\n", "me@host.test", []string{"From: me@host.test\r\n", "Date: Mon, 30 Nov 2026 12:00:00 +0000\r\n", "Message-ID: <"}, nil},
		{"has all", "From: f@x\nDate: Tue, 1 Dec 2026 00:00:00 +0000\nMessage-ID: <id@x>\n\nb\n", "me@host.test", nil, []string{"me@host.test", "2026 12:00"}},
		{"no from wanted", "To: a@x\n\nb\n", "", []string{"Date: "}, []string{"From:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := bufio.NewReader(strings.NewReader(tc.in))
			h, err := ReadHeader(r, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			id, err := h.Complete(now, "host.test", tc.from)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, ">") {
				t.Errorf("message id %q", id)
			}
			b, _ := io.ReadAll(h.Reader(r))
			for _, w := range tc.wantAdded {
				if !strings.Contains(string(b), w) {
					t.Errorf("%q lacks %q", b, w)
				}
			}
			for _, w := range tc.wantAbsent {
				if strings.Contains(string(b), w) {
					t.Errorf("%q has %q", b, w)
				}
			}
		})
	}
}

func TestNoEmptyLineBeforeBody(t *testing.T) {
	_, out := readAll(t, "Subject: s\nthis is body\n")
	if want := "Subject: s\r\n\r\nthis is body\r\n"; out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
}

func TestHeaderLimit(t *testing.T) {
	r := bufio.NewReader(strings.NewReader("Subject: " + strings.Repeat("x", 100) + "\r\n\r\n"))
	if _, err := ReadHeader(r, 50); err != ErrHeaderTooBig {
		t.Fatalf("err %v, want ErrHeaderTooBig", err)
	}
}

// FuzzReadHeader: any input reads without panic, the output has no bare LF
// (only bare CRs the input had), and a CRLF input without Bcc survives intact.
func FuzzReadHeader(f *testing.F) {
	for _, s := range []string{"To: a@x\r\n\r\nb\r\n", "A: b\n c\nno header\n", "\r\n", "", "Bcc: x\r\n", ": x\r\n\r\n", "To: a\rb\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r := bufio.NewReader(strings.NewReader(in))
		h, err := ReadHeader(r, 4096)
		if err != nil {
			return
		}
		_, _ = h.Addresses("To", "Cc", "Bcc")
		b, err := io.ReadAll(h.Reader(r))
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range b {
			if c == '\n' && (i == 0 || b[i-1] != '\r') {
				t.Fatalf("bare LF in %q", b)
			}
		}
	})
}

func FuzzCRLFReader(f *testing.F) {
	f.Add([]byte("a\nb\r\nc\rd\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		want := bytes.ReplaceAll(bytes.ReplaceAll(in, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
		for _, r := range []io.Reader{bytes.NewReader(in), iotest.OneByteReader(bytes.NewReader(in))} {
			out, _ := io.ReadAll(NewCRLFReader(r))
			if !bytes.Equal(out, want) {
				t.Fatalf("%q -> %q, want %q", in, out, want)
			}
		}
	})
}

// FuzzPlainAddress: whatever the fast path accepts, the full parser
// accepts too, as the same single address.
func FuzzPlainAddress(f *testing.F) {
	for _, s := range []string{"a@b", "<a@b.example>", "a.b@c", ".a@b", "a..b@c", "a@b.", "<a@b", "a@b@c", "\"q\"@x", "a@[1.2.3.4]", "N <a@b>", "a+tag@x.test", "{x}@y", "<>", "é@x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := plainAddress(v)
		if !ok {
			return
		}
		list, err := mail.ParseAddressList(v)
		if err != nil || len(list) != 1 || list[0].Address != got {
			t.Fatalf("%q: fast path %q, parser %v %v", v, got, list, err)
		}
	})
}

// RFC 5322 section 4.5.3: a field name may be followed by white space
// before its colon (obsolete syntax that readers must accept). "Bcc :" is
// a Bcc field: its address is a recipient and it is removed; the header
// goes on after it.
func TestObsoleteSpaceBeforeColon(t *testing.T) {
	h, _ := readAll(t, "To: a@x.test\r\nBcc : hidden@x.test\r\nSubject\t: s\r\n\r\nbody\r\n")
	got, err := h.Addresses("To", "Cc", "Bcc")
	if err != nil || strings.Join(got, " ") != "a@x.test hidden@x.test" {
		t.Fatalf("recipients %v (%v)", got, err)
	}
	if s := h.Get("Subject"); s != "s" {
		t.Errorf("Subject %q: the header ended at the Bcc", s)
	}
	h.Remove("Bcc")
	var b bytes.Buffer
	h.WriteTo(&b)
	if b.String() != "To: a@x.test\r\nSubject\t: s\r\n\r\n" {
		t.Fatalf("header after removing Bcc: %q", b.String())
	}
}
