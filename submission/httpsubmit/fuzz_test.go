package httpsubmit

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"
)

// FuzzBuildMIME: whatever JSON arrives, building never panics, and a
// message that builds parses back as MIME with no bare LF.
func FuzzBuildMIME(f *testing.F) {
	f.Add(`{"from":"a@b.c","to":["d@e.f"],"subject":"ü","text":"x\ny","html":"<b>","attachments":[{"filename":"ä.txt","content":"aGk="}]}`)
	f.Add(`{"from":"A <a@b.c>","bcc":["x@y.z"],"headers":{"X-A":"é"}}`)
	f.Fuzz(func(t *testing.T, in string) {
		var m jsonMessage
		if json.Unmarshal([]byte(in), &m) != nil {
			return
		}
		var buf bytes.Buffer
		if _, err := buildMIME(&buf, &m, time.Unix(0, 0), "relay.test"); err != nil {
			return
		}
		out := buf.Bytes()
		for i, c := range out {
			if c == '\n' && (i == 0 || out[i-1] != '\r') {
				t.Fatalf("bare LF in %q", out)
			}
		}
		mr, err := mail.CreateReader(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("built message does not parse: %v\n%q", err, out)
		}
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("part: %v\n%q", err, out)
			}
			_, _ = io.Copy(io.Discard, p.Body)
		}
	})
}
