package resend

import (
	"errors"
	"testing"

	"github.com/relayq/relayq/internal/esp"
)

// FuzzParse: whatever the body, the translators never panic, every
// refusal is an *esp.Error, and a message they return has a sender, a
// recipient, a subject and labels within the limits.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"from":"a@example.com","to":["b@example.net"],"subject":"s","text":"x","tags":[{"name":"k","value":"v"}],"attachments":[{"filename":"a","content":"aGk="}]}`))
	f.Add([]byte(`[{"from":"a@example.com","to":"b@example.net","subject":"s","html":"<b>"}]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		check := func(m esp.Message, err error) {
			if err != nil {
				var e *esp.Error
				if !errors.As(err, &e) {
					t.Fatalf("refusal %T %v is not an *esp.Error", err, err)
				}
				return
			}
			if m.From == "" || len(m.To) == 0 || m.Subject == "" {
				t.Fatalf("incomplete message %+v", m)
			}
			if err := m.CheckLabels("t", "m"); err != nil {
				t.Fatalf("labels over the limits: %v", err)
			}
		}
		check(ParseEmail(in))
		msgs, err := ParseBatch(in)
		check(esp.Message{From: "x", To: []string{"y"}, Subject: "z"}, err)
		for _, m := range msgs {
			check(m, nil)
		}
	})
}
