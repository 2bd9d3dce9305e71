package resend

import (
	"errors"
	"net/http"
	"testing"

	"github.com/relayq/relayq/internal/esp"
)

func TestParseEmail(t *testing.T) {
	m, err := ParseEmail([]byte(`{"from":"Acme <onboarding@example.com>","to":"jane@example.net","cc":["a@example.org","b@example.org"],
		"subject":"Hi","html":"<p>h</p>","text":"t","reply_to":"r@example.com","headers":{"X-B":"2","X-A":"1"},
		"tags":[{"name":"category","value":"welcome"}],"scheduled_at":"2026-12-07T08:00:00Z",
		"attachments":[{"filename":"a.txt","content":"aGk=","content_type":"text/plain"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.To) != 1 || len(m.Cc) != 2 || m.ReplyTo[0] != "r@example.com" {
		t.Errorf("addresses: %+v", m)
	}
	if m.Headers[0].Name != "X-A" || m.Metadata["category"] != "welcome" || m.SendAt.IsZero() {
		t.Errorf("headers, tags, schedule: %+v", m)
	}
	if string(m.Attachments[0].Content) != "hi" {
		t.Errorf("attachment: %+v", m.Attachments)
	}
}

func TestParseEmailRefuses(t *testing.T) {
	const base = `"from":"a@example.com","to":"b@example.net","subject":"s","text":"x"`
	for _, c := range []struct {
		in     string
		field  string
		name   string
		status int
	}{
		{`{` + base + `,"template":{"id":"t"}}`, "template", NameValidation, 422},
		{`{` + base + `,"topic_id":"x"}`, "topic_id", NameValidation, 422},
		{`{` + base + `,"attachments":[{"filename":"a","path":"https://example.com/a"}]}`, "attachments[0].path", NameValidation, 422},
		{`{` + base + `,"scheduled_at":"in 1 min"}`, "scheduled_at", NameValidation, 422},
		{`{` + base + `,"tracking":true}`, "tracking", NameValidation, 422},
		{`{` + base + `,"to":5}`, "to", NameValidation, 400},
		{`{` + base + `,"tags":[{"name":"a b"}]}`, "tags[0].name", NameValidation, 422},
		{`{"from":"a@example.com","subject":"s"}`, "to", NameMissingField, 422},
	} {
		_, err := ParseEmail([]byte(c.in))
		var e *esp.Error
		if !errors.As(err, &e) || e.Field != c.field {
			t.Errorf("%s: err = %v, want one naming %s", c.in, err, c.field)
			continue
		}
		if r := Failure(err); r.Name != c.name || r.StatusCode != c.status && !(c.status == 400 && r.StatusCode == http.StatusUnprocessableEntity) {
			t.Errorf("%s: %+v, want %s %d", c.in, r, c.name, c.status)
		}
	}
}

func TestParseBatch(t *testing.T) {
	one := `{"from":"a@example.com","to":"b@example.net","subject":"s","text":"x"}`
	if msgs, err := ParseBatch([]byte(`[` + one + `,` + one + `]`)); err != nil || len(msgs) != 2 {
		t.Fatalf("%d, %v", len(msgs), err)
	}
	_, err := ParseBatch([]byte(`[` + one + `,{"from":"a@example.com","to":"b@example.net","subject":"s","scheduled_at":"2026-12-07T08:00:00Z"}]`))
	var e *esp.Error
	if !errors.As(err, &e) || e.Field != "[1].scheduled_at" {
		t.Errorf("scheduled_at in a batch: %v", err)
	}
}
