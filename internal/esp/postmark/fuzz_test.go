package postmark

import (
	"errors"
	"testing"

	"github.com/relayq/relayq/internal/esp"
)

// FuzzParse: whatever the body, the translators never panic, every
// refusal is an *esp.Error, and a message they return has a sender, a
// recipient, a body and labels within the limits.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"From":"a@example.com","To":"b@example.net, \"x, y\" <c@example.org>","TextBody":"x","Tag":"t","Metadata":{"k":"v"},"Attachments":[{"Name":"a","Content":"aGk="}]}`))
	f.Add([]byte(`[{"From":"a@example.com","To":"b@example.net","HtmlBody":"<b>"}]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		check := func(m esp.Message, err error) {
			var e *esp.Error
			if err != nil {
				if !errors.As(err, &e) {
					t.Fatalf("refusal %T %v is not an *esp.Error", err, err)
				}
				return
			}
			if m.From == "" || len(m.To)+len(m.Cc)+len(m.Bcc) == 0 || m.Text == "" && m.HTML == "" {
				t.Fatalf("incomplete message %+v", m)
			}
			if err := m.CheckLabels("t", "m"); err != nil {
				t.Fatalf("labels over the limits: %v", err)
			}
		}
		check(ParseEmail(in))
		msgs, errs, err := ParseBatch(in)
		if err != nil {
			check(esp.Message{}, err)
			return
		}
		for i := range msgs {
			check(msgs[i], errs[i])
		}
	})
}
