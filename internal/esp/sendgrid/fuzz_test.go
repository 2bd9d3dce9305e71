package sendgrid

import (
	"errors"
	"testing"

	"github.com/relayq/relayq/internal/esp"
)

// FuzzParse: whatever the body, Parse never panics, every refusal is an
// *esp.Error, and each message it returns has a sender, a recipient, a
// subject, a body and labels within the limits.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"personalizations":[{"to":[{"email":"a@example.net","name":"A"}],"custom_args":{"k":"v"}}],"from":{"email":"app@example.org"},"subject":"s","content":[{"type":"text/plain","value":"x"}],"categories":["c"],"attachments":[{"content":"aGk=","filename":"a"}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		msgs, err := Parse(in)
		if err != nil {
			var e *esp.Error
			if !errors.As(err, &e) {
				t.Fatalf("refusal %T %v is not an *esp.Error", err, err)
			}
			return
		}
		for _, m := range msgs {
			if m.From == "" || len(m.To) == 0 || m.Subject == "" || m.Text == "" && m.HTML == "" {
				t.Fatalf("incomplete message %+v", m)
			}
			if err := m.CheckLabels("t", "m"); err != nil {
				t.Fatalf("labels over the limits: %v", err)
			}
		}
	})
}
