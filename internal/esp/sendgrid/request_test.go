package sendgrid

import (
	"errors"
	"testing"

	"github.com/relayq/relayq/internal/esp"
)

// Each personalization is its own message; its fields override the
// request's.
func TestParsePersonalizations(t *testing.T) {
	msgs, err := Parse([]byte(`{"from":{"email":"app@example.org","name":"App"},"subject":"Hi",
		"personalizations":[{"to":[{"email":"a@example.net"}],"custom_args":{"user":"1"}},
		                    {"to":[{"email":"b@example.net","name":"B"}],"subject":"Hi B","send_at":1796544000}],
		"content":[{"type":"text/plain","value":"t"},{"type":"text/html","value":"<p>h</p>"}],
		"categories":["welcome"],"custom_args":{"campaign":"c1"},"headers":{"X-A":"1"},
		"tracking_settings":{"click_tracking":{"enable":false}},
		"attachments":[{"content":"aGk=","filename":"a.txt","type":"text/plain"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].To[0] != "<a@example.net>" || msgs[1].To[0] != `"B" <b@example.net>` {
		t.Fatalf("%+v", msgs)
	}
	if msgs[0].Metadata["user"] != "1" || msgs[0].Metadata["campaign"] != "c1" || msgs[1].Metadata["user"] != "" {
		t.Errorf("custom_args: %v / %v", msgs[0].Metadata, msgs[1].Metadata)
	}
	if msgs[1].Subject != "Hi B" || msgs[0].Subject != "Hi" || msgs[1].SendAt.Unix() != 1796544000 || !msgs[0].SendAt.IsZero() {
		t.Errorf("overrides: %+v", msgs)
	}
	if msgs[0].Tags[0] != "welcome" || len(msgs[0].Attachments) != 1 || msgs[0].From != `"App" <app@example.org>` {
		t.Errorf("shared fields: %+v", msgs[0])
	}
}

func TestParseRefuses(t *testing.T) {
	const p = `"personalizations":[{"to":[{"email":"a@example.net"}]}],"from":{"email":"app@example.org"},"subject":"s","content":[{"type":"text/plain","value":"x"}]`
	for _, c := range []struct{ in, field string }{
		{`{` + p + `,"template_id":"d-1"}`, "template_id"},
		{`{` + p + `,"tracking_settings":{"open_tracking":{"enable":true}}}`, "tracking_settings.open_tracking"},
		{`{` + p + `,"mail_settings":{"sandbox_mode":{"enable":true}}}`, "mail_settings.sandbox_mode"},
		{`{` + p + `,"asm":{"group_id":1}}`, "asm"},
		{`{` + p + `,"send_at":"tomorrow"}`, "send_at"},
		{`{` + p + `,"unknown":1}`, "unknown"},
		{`{"personalizations":[{"to":[{"email":"a@example.net"}],"dynamic_template_data":{}}],"from":{"email":"app@example.org"},"subject":"s","content":[{"type":"text/plain","value":"x"}]}`, "personalizations.0.dynamic_template_data"},
		{`{"personalizations":[],"from":{"email":"app@example.org"},"subject":"s","content":[{"type":"text/plain","value":"x"}]}`, "personalizations"},
		{`{"personalizations":[{"to":[{"email":"nope"}]}],"from":{"email":"app@example.org"},"subject":"s","content":[{"type":"text/plain","value":"x"}]}`, "personalizations.0.to.0.email"},
	} {
		_, err := Parse([]byte(c.in))
		var e *esp.Error
		if !errors.As(err, &e) || e.Field != c.field {
			t.Errorf("%s: %v, want an error naming %s", c.in, err, c.field)
		}
		if status, body := Failure(err); status != 400 || body.Errors[0].Field == nil || *body.Errors[0].Field != c.field {
			t.Errorf("%s: %d %+v", c.in, status, body)
		}
	}
}
