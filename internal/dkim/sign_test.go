package dkim

import (
	"bytes"
	"crypto/rsa"
	"fmt"
	"slices"
	"strings"
	"testing"

	msgauth "github.com/emersion/go-msgauth/dkim"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
)

// A message signed with an RSA and an Ed25519 key of its From: domain
// carries two signatures that both verifiers accept, whatever the sizes of
// the writes it streamed in with.
func TestDualSignatureVerifies(t *testing.T) {
	keys := []Key{
		{Domain: "example.org", Selector: "rsa1", Signer: rsaKey()},
		{Domain: "example.org", Selector: "ed1", Signer: edKey()},
	}
	s := NewSigner(Config{Keys: keys})
	recs := records(t, keys...)
	for _, n := range []int{1, 3, 7, 64, 1 << 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			signed := signStream(t, s, testMessage, n)
			got := dkimtest.Verify(t, signed, recs)
			want := []string{"d=example.org s=rsa1", "d=example.org s=ed1"}
			if !slices.Equal(got, want) {
				t.Fatalf("signatures %q, want %q", got, want)
			}
		})
	}
}

// A body larger than any buffer still verifies (it is hashed as it passes).
func TestLargeBodyVerifies(t *testing.T) {
	k := Key{Domain: "example.org", Selector: "ed1", Signer: edKey()}
	var b strings.Builder
	b.WriteString(testMessage)
	for i := 0; b.Len() < 3<<20; i++ {
		fmt.Fprintf(&b, "line %d of a long report, with some text to fill it up\r\n", i)
	}
	signed := signStream(t, NewSigner(Config{Keys: []Key{k}}), b.String(), 32<<10)
	dkimtest.Verify(t, signed, records(t, k))
}

// Which keys sign which message.
func TestKeyChoice(t *testing.T) {
	keys := []Key{
		{Domain: "example.org", Selector: "a", Signer: edKey()},
		{Domain: "example.org", Selector: "b", Signer: edKey2()},
		{Domain: "mail.example.org", Selector: "m", Signer: edKey()},
		{Domain: "Other.Example.", Selector: "o", Signer: edKey()},
	}
	s := NewSigner(Config{Keys: keys})
	const rest = "To: x@example.net\r\nSubject: hi\r\n\r\nbody\r\n"
	tests := []struct {
		name, msg string
		want      []string
	}{
		{"exact domain, both keys", "From: a@example.org\r\n" + rest, []string{"d=example.org s=a", "d=example.org s=b"}},
		{"subdomain uses the parent's keys", "From: a@news.example.org\r\n" + rest, []string{"d=example.org s=a", "d=example.org s=b"}},
		{"most specific domain wins", "From: a@x.mail.example.org\r\n" + rest, []string{"d=mail.example.org s=m"}},
		{"case and display name", "From: \"A, B\" <A@OTHER.example>\r\n" + rest, []string{"d=Other.Example. s=o"}},
		{"unparseable From still finds the domain", "From: broken <<a@example.org\r\n" + rest, []string{"d=example.org s=a", "d=example.org s=b"}},
		{"other domain", "From: a@example.net\r\n" + rest, nil},
		{"lookalike is not a subdomain", "From: a@badexample.org\r\n" + rest, nil},
		{"no From", "To: x@example.net\r\n\r\nbody\r\n", nil},
		{"From only in the body", "To: x@example.net\r\n\r\nFrom: a@example.org\r\n", nil},
		{"already signed with one selector", "DKIM-Signature: v=1; a=rsa-sha256; d=Example.org;\r\n s=A; b=xyz\r\nFrom: a@example.org\r\n" + rest, []string{"d=example.org s=b", "d=Example.org s=A"}},
		{"header without body", "From: a@example.org\r\nSubject: no body\r\n", []string{"d=example.org s=a", "d=example.org s=b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			signed := signStream(t, s, tt.msg, 5)
			if got := dkimtest.Signatures(signed); !slices.Equal(got, tt.want) {
				t.Fatalf("signatures %q, want %q", got, tt.want)
			}
			if !bytes.HasSuffix(signed, []byte(tt.msg)) {
				t.Fatalf("the message itself changed:\n%s", signed)
			}
		})
	}
}

// The signature covers From: once more than it occurs (a From: added on the
// way breaks it), the default fields present, and not the trace fields.
func TestSignedHeaderFields(t *testing.T) {
	k := Key{Domain: "example.org", Selector: "s", Signer: edKey()}
	signed := signStream(t, NewSigner(Config{Keys: []Key{k}}), testMessage, 1<<20)
	h := tagOf(t, signed, "h")
	want := "From:From:Subject:Date:Message-ID:To:MIME-Version:Content-Type"
	if h != want {
		t.Fatalf("h=%s, want %s", h, want)
	}
	tampered := bytes.Replace(signed, []byte("From: App"), []byte("From: evil@example.com\r\nFrom: App"), 1)
	recs := records(t, k)
	vs, err := msgauth.VerifyWithOptions(bytes.NewReader(tampered), &msgauth.VerifyOptions{LookupTXT: recs.LookupTXT})
	if err != nil || len(vs) != 1 || vs[0].Err == nil {
		t.Fatalf("a second From: added after signing still verifies: %v %v", vs, err)
	}
	custom := signStream(t, NewSigner(Config{Keys: []Key{k}, Headers: []string{"Subject", "X-Campaign"}}),
		"From: a@example.org\r\nX-Campaign: 7\r\nSubject: s\r\n\r\nb\r\n", 1<<20)
	if h := tagOf(t, custom, "h"); h != "Subject:X-Campaign:From:From" {
		t.Fatalf("h=%s with configured headers", h)
	}
	dkimtest.Verify(t, custom, recs)
}

// tagOf returns a tag of the first DKIM-Signature of msg, whitespace removed.
func tagOf(t *testing.T, msg []byte, tag string) string {
	t.Helper()
	hdr, _, _ := bytes.Cut(msg, []byte("\r\n\r\n"))
	for _, f := range parseFields(append(hdr, "\r\n"...)) {
		if f.name != "DKIM-Signature" {
			continue
		}
		for _, kv := range strings.Split(f.value, ";") {
			k, v, _ := strings.Cut(kv, "=")
			if strings.TrimSpace(k) == tag {
				return strings.Join(strings.Fields(v), "")
			}
		}
	}
	t.Fatalf("no %s= in\n%s", tag, msg)
	return ""
}

// Expiration sets x= that far after t=.
func TestExpiration(t *testing.T) {
	k := Key{Domain: "example.org", Selector: "s", Signer: edKey()}
	signed := signStream(t, NewSigner(Config{Keys: []Key{k}, Expiration: 3600e9}), testMessage, 100)
	var ts, xs int64
	fmt.Sscan(tagOf(t, signed, "t"), &ts)
	fmt.Sscan(tagOf(t, signed, "x"), &xs)
	if d := xs - ts; d < 3599 || d > 3601 {
		t.Fatalf("x - t = %d, want 3600", d)
	}
	dkimtest.Verify(t, signed, records(t, k))
}

// A header section too long to buffer is refused when its From: domain has
// keys, and passes unsigned when it has none.
func TestHugeHeader(t *testing.T) {
	s := NewSigner(Config{Keys: []Key{{Domain: "example.org", Selector: "s", Signer: edKey()}}})
	junk := "X-Junk: " + strings.Repeat("x", 900) + "\r\n"
	for _, from := range []string{"a@example.org", "a@example.net"} {
		m := s.Begin()
		m.Write([]byte("From: " + from + "\r\n"))
		for range MaxHeaderBytes/len(junk) + 1 {
			m.Write([]byte(junk))
		}
		m.Write([]byte("\r\nbody\r\n"))
		prefix, err := m.Finish()
		m.Close()
		if from == "a@example.org" && err == nil {
			t.Errorf("%s: signed a header section over %d bytes: %q", from, MaxHeaderBytes, prefix)
		}
		if from == "a@example.net" && (err != nil || prefix != nil) {
			t.Errorf("%s: %q %v, want no signature and no error", from, prefix, err)
		}
	}
}

// Update swaps keys for new messages; one already started keeps its keys.
func TestUpdateRotates(t *testing.T) {
	old := Key{Domain: "example.org", Selector: "old", Signer: edKey()}
	next := Key{Domain: "example.org", Selector: "new", Signer: edKey2()}
	s := NewSigner(Config{Keys: []Key{old}})
	started := s.Begin()
	defer started.Close()
	s.Update(Config{Keys: []Key{next}})
	started.Write([]byte(testMessage))
	prefix, err := started.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if got := dkimtest.Signatures(append(prefix, testMessage...)); !slices.Equal(got, []string{"d=example.org s=old"}) {
		t.Fatalf("message in flight: %q", got)
	}
	signed := signStream(t, s, testMessage, 10)
	if got := dkimtest.Verify(t, signed, records(t, next)); !slices.Equal(got, []string{"d=example.org s=new"}) {
		t.Fatalf("after Update: %q", got)
	}
	s.Update(Config{})
	if got := dkimtest.Signatures(signStream(t, s, testMessage, 10)); got != nil {
		t.Fatalf("after removing every key: %q", got)
	}
}

// Sign is the whole-message form used for relayq's own reports.
func TestSignBytes(t *testing.T) {
	k := Key{Domain: "relay.example.org", Selector: "s", Signer: rsaKey()}
	s := NewSigner(Config{Keys: []Key{k}})
	msg := []byte("From: Mail Delivery System <MAILER-DAEMON@relay.example.org>\r\nTo: a@example.org\r\n\r\nreport\r\n")
	out, err := s.Sign(msg)
	if err != nil {
		t.Fatal(err)
	}
	dkimtest.Verify(t, out, records(t, k))
	var zero Signer
	if out, err := zero.Sign(msg); err != nil || !bytes.Equal(out, msg) {
		t.Fatalf("zero Signer: %q %v", out, err)
	}
}

// Abandoned messages release their signers (no goroutine stays blocked).
// A Message whose upload broke off is closed, not finished: Close drops
// what it holds, may be called again, and leaves nothing to sign.
func TestCloseWithoutFinish(t *testing.T) {
	s := NewSigner(Config{Keys: []Key{{Domain: "example.org", Selector: "s", Signer: edKey()}}})
	m := s.Begin()
	m.Write([]byte(testMessage[:len(testMessage)/2]))
	if m.state != stateSigning && m.state != stateHeader {
		t.Fatalf("state %d after half a message: the test would close an idle Message", m.state)
	}
	m.Close()
	if m.keys != nil || m.hdr != nil || m.canon != nil {
		t.Errorf("Close kept keys %v, header %d bytes, canon %d bytes", m.keys, len(m.hdr), len(m.canon))
	}
	m.Close() // again: no panic
	// A whole message written after Close is not signed either.
	if n, err := m.Write([]byte(testMessage)); n != len(testMessage) || err != nil {
		t.Errorf("Write after Close = %d, %v; want all bytes taken, no error (Write never fails)", n, err)
	}
	if sig, err := m.Finish(); sig != nil || err != nil {
		t.Errorf("Finish after Close = %q, %v; want no signature and no error", sig, err)
	}
}

// An RSA key built from its numbers, without precomputed CRT values, signs
// messages that verify, and the caller's key is left as it was given.
func TestBareRSAKeySigns(t *testing.T) {
	bare := bareRSAKey().(*rsa.PrivateKey)
	k := Key{Domain: "example.org", Selector: "rsa1", Signer: bare}
	s := NewSigner(Config{Keys: []Key{k}})
	dkimtest.Verify(t, signStream(t, s, testMessage, 64), records(t, k))
	if bare.Precomputed.Dp != nil {
		t.Error("the Signer wrote to the caller's key")
	}
}
