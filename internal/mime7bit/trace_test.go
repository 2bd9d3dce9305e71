package mime7bit

import (
	"bytes"
	"strings"
	"testing"
)

// RFC 5321 section 4.4: trace fields (Received) form one block at the top
// of the header section, and relayq's own Received is the first line. A
// converted message without MIME-Version and Content-Type gets both, and
// they must go below the trace block, not above it.
func TestConvertKeepsTraceBlockOnTop(t *testing.T) {
	src := "Received: from a by relay.example; Tue, 1 Dec 2026 00:00:00 +0000\r\n" +
		"Received: from b by a; Tue, 1 Dec 2026 00:00:00 +0000\r\n" +
		"From: <app@example.org>\r\nSubject: plain\r\n\r\nGr\xc3\xbc\xc3\x9fe\r\n"
	p, err := Scan(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := p.Convert(&out, strings.NewReader(src)); err != nil {
		t.Fatal(err)
	}
	hdr, _, _ := strings.Cut(out.String(), "\r\n\r\n")
	lines := strings.Split(hdr, "\r\n")
	want := []string{"Received: from a", "Received: from b", "From:", "Subject:", "Content-Type: text/plain; charset=utf-8", "MIME-Version: 1.0", "Content-Transfer-Encoding: quoted-printable"}
	if len(lines) != len(want) {
		t.Fatalf("header lines:\n%s", hdr)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want %q...; header:\n%s", i, lines[i], w, hdr)
		}
	}
}
