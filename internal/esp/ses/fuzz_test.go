package ses

import (
	"errors"
	"testing"

	"github.com/relayq/relayq/internal/esp"
)

// FuzzParse: whatever the body, Parse never panics, every refusal is an
// *esp.Error, and a message it returns is Raw bytes or has a sender, a
// recipient and a body, with labels within the limits.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"FromEmailAddress":"a@example.org","Destination":{"ToAddresses":["b@example.net"]},"Content":{"Simple":{"Subject":{"Data":"s"},"Body":{"Text":{"Data":"x"}},"Attachments":[{"FileName":"a","RawContent":"aGk="}]}},"EmailTags":[{"Name":"k","Value":"v"}]}`))
	f.Add([]byte(`{"Content":{"Raw":{"Data":"RnJvbTogYUBiLmMNCg0KeA=="}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := Parse(in)
		if err != nil {
			var e *esp.Error
			if !errors.As(err, &e) {
				t.Fatalf("refusal %T %v is not an *esp.Error", err, err)
			}
			return
		}
		if m.Raw == nil && (m.From == "" || len(m.To)+len(m.Cc)+len(m.Bcc) == 0 || m.Text == "" && m.HTML == "") {
			t.Fatalf("incomplete message %+v", m)
		}
		if err := m.CheckLabels("t", "m"); err != nil {
			t.Fatalf("labels over the limits: %v", err)
		}
	})
}
