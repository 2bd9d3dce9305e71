package dkim

import (
	"bytes"
	"fmt"
	"net/mail"
	"strings"
	"testing"
	"time"

	msgauth "github.com/emersion/go-msgauth/dkim"

	"github.com/relayq/relayq/internal/clock"
)

// librarySign signs msg with go-msgauth's own signer as Message signed it
// before it did its own canonicalization: the same h=, relaxed/relaxed,
// and the message completed with CRLF when its header section has no end.
// It returns the signature fields and their t= time.
func librarySign(t *testing.T, k Key, msg []byte) ([]byte, time.Time) {
	t.Helper()
	if headerEnd(msg, 0) < 0 {
		msg = append(bytes.Clone(msg), "\r\n"...)
	}
	hdr := msg
	if end := headerEnd(msg, 0); end >= 0 {
		hdr = msg[:end]
	}
	s, err := msgauth.NewSigner(&msgauth.SignOptions{
		Domain: k.Domain, Selector: k.Selector, Signer: k.Signer,
		HeaderCanonicalization: msgauth.CanonicalizationRelaxed,
		BodyCanonicalization:   msgauth.CanonicalizationRelaxed,
		HeaderKeys:             newHeaderSet(DefaultHeaders).keys(parseFields(hdr)),
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Write(msg)
	if err := s.Close(); err != nil {
		return nil, time.Time{}
	}
	sig := []byte(s.Signature())
	var ts int64
	fmt.Sscan(tagOf(t, append(bytes.Clone(sig), "\r\n"...), "t"), &ts)
	return sig, time.Unix(ts, 0)
}

// ourSign signs msg with Message at time at, written n bytes at a time.
func ourSign(k Key, msg []byte, at time.Time, n int) ([]byte, error) {
	s := NewSigner(Config{Keys: []Key{k}})
	s.clock = clock.NewFake(at)
	m := s.Begin()
	defer m.Close()
	for i := 0; i < len(msg); i += n {
		m.Write(msg[i:min(i+n, len(msg))])
	}
	return m.Finish()
}

// The signatures Message makes are byte for byte the ones go-msgauth's
// signer makes (both key types sign deterministically), whatever the
// whitespace, folding, line ends and write sizes.
func TestSignatureMatchesLibrary(t *testing.T) {
	keys := []Key{
		{Domain: "example.org", Selector: "ed", Signer: edKey()},
		{Domain: "Example.ORG.", Selector: "a-much-longer-selector-name-202611", Signer: rsaKey()},
	}
	msgs := []string{
		testMessage,
		"From: a@example.org\r\nSubject: no body\r\n",
		"From: a@example.org\r\nSubject: x\r\n\r\n",
		"From: a@example.org\r\n\r\n\r\n\r\n",
		"From:a@example.org\r\nSUBJECT :  folded\r\n\tacross \r\n  lines  \r\nTo: b@example.net\r\n\r\n  lead\tand  trail \t\r\n\r\nx\r\n \r\n\t\r\n",
		"From: a@example.org\r\nTo: one\r\nTo: two\r\nno colon line\r\n\r\nbody without end",
		"From: a@example.org\r\nSubject: bare\r\n\r\nbody\nwith bare LF\rand CR\r\n\n\r\n",
		"From: a@example.org\r\nX: a\nb\r\nTo: c\r\n\r\nbody",
		"From: a@example.org\r\nX: 1\n\nTo: 2\r\n\r\nbody\r",
		"From: a@example.org\r\nSubject: \xff\xfe non-UTF-8 \u00a0\r\n\r\n\xc3\x28 body\r\n",
		"From: a@example.org\r\nFrom: b@example.org\r\nReply-To: c\r\n\r\n" + strings.Repeat("line of text  \r\n", 400),
	}
	for _, k := range keys {
		for i, msg := range msgs {
			want, at := librarySign(t, k, []byte(msg))
			for _, n := range []int{1, 2, 7, 1 << 20} {
				got, err := ourSign(k, []byte(msg), at, n)
				if got == nil && err == nil {
					t.Fatalf("msg %d: nothing signed", i)
				}
				if want == nil {
					if err == nil {
						t.Errorf("%s msg %d n=%d: signed what go-msgauth refuses", k.Selector, i, n)
					}
					continue
				}
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s msg %d n=%d: %v\n got %q\nwant %q", k.Selector, i, n, err, got, want)
				}
			}
		}
	}
}

// FuzzSignatureMatchesLibrary checks the same on arbitrary messages.
func FuzzSignatureMatchesLibrary(f *testing.F) {
	f.Add([]byte(testMessage), 3)
	f.Add([]byte("From: a@example.org\r\nX: \t\r\n \r\n\r\n \r\n\r\r\n\n.\r\n"), 1)
	f.Add([]byte("From: a@example.org\nTo:\n\n\n"), 2)
	k := Key{Domain: "example.org", Selector: "s", Signer: edKey()}
	f.Fuzz(func(t *testing.T, msg []byte, n int) {
		if n <= 0 || !bytes.Contains(msg, []byte("example.org")) {
			return
		}
		got, err := ourSign(k, msg, time.Unix(1700000000, 0), n)
		if got == nil && err == nil {
			return // nothing to sign (no From: of example.org)
		}
		want, at := librarySign(t, k, msg)
		if want == nil {
			if err == nil {
				t.Fatalf("signed what go-msgauth refuses: %q", msg)
			}
			return
		}
		got, err = ourSign(k, msg, at, n)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%v\n got %q\nwant %q", err, got, want)
		}
	})
}

// FuzzFromDomain checks fromValueDomain's shortcut against the parser.
func FuzzFromDomain(f *testing.F) {
	for _, v := range []string{" App <app@Example.org>", "a@b.c (x)", "=?utf-8?q?x?= <a@b.c>", "g: a@b.c;", "<a@b.c", "a@b.c>x", "a@b.c d", "a@[1.2.3.4]"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		want := domainOf(v)
		if list, err := mail.ParseAddressList(v); err == nil && len(list) > 0 {
			want = domainOf(list[0].Address)
		}
		if got := fromValueDomain(v); got != want {
			t.Fatalf("fromValueDomain(%q) = %q, the parser gives %q", v, got, want)
		}
	})
}
