package postmark

import (
	"errors"
	"testing"

	"github.com/relayq/relayq/internal/esp"
)

func TestParseEmail(t *testing.T) {
	m, err := ParseEmail([]byte(`{"From":"Sender <sender@example.com>","To":"\"Doe, Jane\" <jane@example.net>, bob@example.org",
		"Cc":"","Subject":"Hi","TextBody":"t","HtmlBody":"<p>h</p>","Tag":"welcome","Metadata":{"user":"42"},
		"Headers":[{"Name":"X-A","Value":"1"}],"MessageStream":"broadcast","TrackOpens":false,"TrackLinks":"None",
		"Attachments":[{"Name":"a.txt","Content":"aGk=","ContentType":"text/plain","ContentID":null}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.From != `"Sender" <sender@example.com>` || len(m.To) != 2 || m.To[0] != `"Doe, Jane" <jane@example.net>` {
		t.Errorf("addresses: %q %q", m.From, m.To)
	}
	if m.Stream != "broadcast" || m.Tags[0] != "welcome" || m.Metadata["user"] != "42" || len(m.Headers) != 1 {
		t.Errorf("labels: %+v", m)
	}
	if len(m.Attachments) != 1 || string(m.Attachments[0].Content) != "hi" {
		t.Errorf("attachments: %+v", m.Attachments)
	}
}

// Each refused request names its field and gets Postmark's ErrorCode for
// the kind of fault: the SDK shows both.
func TestParseEmailRefuses(t *testing.T) {
	const base = `"From":"a@example.com","To":"b@example.net","TextBody":"x"`
	for _, c := range []struct {
		in    string
		field string
		code  int
	}{
		{`{` + base + `,"TrackOpens":true}`, "TrackOpens", CodeInvalidRequest},
		{`{` + base + `,"TrackLinks":"HtmlAndText"}`, "TrackLinks", CodeInvalidRequest},
		{`{` + base + `,"TemplateId":123}`, "TemplateId", CodeInvalidRequest},
		{`{` + base + `,"Unknown":1}`, "Unknown", CodeInvalidRequest},
		{`{` + base + `,"to":"c@example.net"}`, "to", CodeInvalidJSON},
		{`{` + base + `,"Metadata":{"a":1}}`, "Metadata", CodeIncompatibleJSON},
		{`{"To":"b@example.net","TextBody":"x"}`, "From", CodeInvalidRequest},
		{`{"From":"a@example.com","TextBody":"x"}`, "To", CodeInvalidRequest},
		{`{"From":"a@example.com","To":"b@example.net"}`, "HtmlBody", CodeInvalidRequest},
		{`{` + base + `,"Attachments":[{"Name":"a","Content":"!!"}]}`, "Attachments[0].Content", CodeInvalidRequest},
		{`{` + base + `,"Cc":"not an address"}`, "Cc", CodeInvalidRequest},
	} {
		_, err := ParseEmail([]byte(c.in))
		var e *esp.Error
		if !errors.As(err, &e) || e.Field != c.field {
			t.Errorf("%s: err = %v, want one naming %s", c.in, err, c.field)
			continue
		}
		if _, r := Failure(err); r.ErrorCode != c.code {
			t.Errorf("%s: ErrorCode %d, want %d", c.in, r.ErrorCode, c.code)
		}
	}
}

func TestParseBatch(t *testing.T) {
	msgs, errs, err := ParseBatch([]byte(`[{"From":"a@example.com","To":"b@example.net","TextBody":"x"},{"From":"a@example.com","TextBody":"x"}]`))
	if err != nil || len(msgs) != 2 || errs[0] != nil || errs[1] == nil {
		t.Fatalf("msgs %d, errs %v, err %v", len(msgs), errs, err)
	}
	if _, _, err := ParseBatch([]byte(`{"From":"a@example.com"}`)); err == nil {
		t.Error("an object for a batch was taken")
	}
}
