package httpsubmit

import (
	"mime"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/goldenfile"
)

// A long non-ASCII subject from JSON is folded between its encoded words:
// no line over 76 characters (RFC 2047 section 2), where go-message wrote
// six words on one 492-character line, and it decodes to the subject
// that was posted. The field is compared with testdata/subject.golden.
func TestJSONSubjectFolded(t *testing.T) {
	e := start(t, envOpts{trusted: true})
	subject := "Ihre Bestellung Nr. 4711 über 3 Artikel ist unterwegs – Lieferung voraussichtlich am Donnerstag, " +
		"Größe XL, Farbe Grün, Rückfragen bitte an unseren Kundendienst unter Angabe der Bestellnummer"
	r := postJSON(t, e, "", map[string]any{"from": "shop@example.org", "to": []string{"kunde@example.net"}, "subject": subject, "text": "hallo"})
	if r.status != http.StatusAccepted {
		t.Fatalf("status %d %+v", r.status, r.err)
	}
	data := string(e.mx.WaitMessages(t, 1, 10*time.Second)[0].Data)
	i := strings.Index(data, "\r\nSubject:")
	if i < 0 {
		t.Fatalf("no Subject:\n%s", data)
	}
	field := data[i+2:]
	end := 0
	for {
		n := strings.Index(field[end:], "\r\n") + end + 2
		end = n
		if field[n] != ' ' && field[n] != '\t' {
			break
		}
	}
	field = field[:end]
	for _, line := range strings.Split(strings.TrimSuffix(field, "\r\n"), "\r\n") {
		if len(line) > maxEncodedLine {
			t.Errorf("a %d-character line: %q", len(line), line)
		}
	}
	unfolded := strings.ReplaceAll(strings.TrimPrefix(strings.TrimSuffix(field, "\r\n"), "Subject: "), "\r\n", "")
	if got, err := new(mime.WordDecoder).DecodeHeader(unfolded); err != nil || got != subject {
		t.Errorf("decodes to %q (%v)", got, err)
	}
	goldenfile.Check(t, "testdata/subject.golden", []byte(field))
}

// Every line of an encoded field fits in 76 characters, for short and
// long field names, and the words decode to the text.
func TestFoldEncoded(t *testing.T) {
	for _, k := range []string{"Subject", "X-" + strings.Repeat("n", 68)} {
		for _, v := range []string{"ü", "Grüße " + strings.Repeat("😀 emoji and text ", 20), strings.Repeat("€", 100), "a=b?c_d ü"} {
			f := foldEncoded(k, v)
			lines := strings.Split(strings.TrimSuffix(f, "\r\n"), "\r\n")
			for _, l := range lines {
				if len(l) > maxEncodedLine {
					t.Errorf("%s: a %d-character line %q", k, len(l), l)
				}
			}
			val := strings.TrimPrefix(strings.Join(lines, ""), k+":")
			if got, err := new(mime.WordDecoder).DecodeHeader(strings.TrimSpace(val)); err != nil || got != v {
				t.Errorf("%s: %q decodes to %q (%v)", k, v, got, err)
			}
		}
	}
}
