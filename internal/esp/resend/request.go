package resend

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/esp"
)

// email is the body of POST /emails, one item of /emails/batch.
type email struct {
	From        string            `json:"from"`
	To          addresses         `json:"to"`
	Subject     string            `json:"subject"`
	Cc          addresses         `json:"cc"`
	Bcc         addresses         `json:"bcc"`
	ReplyTo     addresses         `json:"reply_to"`
	HTML        string            `json:"html"`
	Text        string            `json:"text"`
	Headers     map[string]string `json:"headers"`
	Attachments []attachment      `json:"attachments"`
	Tags        []tag             `json:"tags"`
	ScheduledAt string            `json:"scheduled_at"`
	Template    json.RawMessage   `json:"template"`
	TopicID     json.RawMessage   `json:"topic_id"`
	React       json.RawMessage   `json:"react"`
}

type attachment struct {
	Content     string          `json:"content"`
	Filename    string          `json:"filename"`
	Path        json.RawMessage `json:"path"`
	ContentType string          `json:"content_type"`
	ContentID   string          `json:"content_id"`
}

type tag struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// addresses is Resend's string-or-array address field.
type addresses []string

func (a *addresses) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*a = addresses{one}
		if one == "" {
			*a = nil
		}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return &json.UnmarshalTypeError{Value: "value", Type: typeOfStrings}
	}
	*a = many
	return nil
}

// MaxBatch is how many emails one /emails/batch may hold (Resend's limit).
const MaxBatch = 100

// ParseEmail translates the body of POST /emails.
func ParseEmail(data []byte) (esp.Message, error) {
	var e email
	if err := esp.Decode(data, &e); err != nil {
		return esp.Message{}, err
	}
	return e.message("")
}

// ParseBatch translates the body of POST /emails/batch, whole: the first
// item that does not translate refuses the request, its field prefixed
// with its index ("[3].to").
func ParseBatch(data []byte) ([]esp.Message, error) {
	var items []email
	if err := esp.Decode(data, &items); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, esp.Invalid("(body)", "a batch holds at least one email")
	}
	if len(items) > MaxBatch {
		return nil, &esp.Error{Kind: esp.TooLarge, Field: "(body)", Detail: fmt.Sprintf("a batch holds at most %d emails", MaxBatch)}
	}
	out := make([]esp.Message, len(items))
	for i := range items {
		p := fmt.Sprintf("[%d].", i)
		switch {
		case len(items[i].Attachments) > 0:
			return nil, esp.Refused(p+"attachments", "Resend's batch endpoint takes no attachments")
		case items[i].ScheduledAt != "":
			return nil, esp.Refused(p+"scheduled_at", "Resend's batch endpoint takes no scheduled_at")
		}
		var err error
		if out[i], err = items[i].message(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (e *email) message(p string) (esp.Message, error) {
	if err := e.refuseUnsupported(p); err != nil {
		return esp.Message{}, err
	}
	m := esp.Message{From: e.From, To: e.To, Cc: e.Cc, Bcc: e.Bcc, ReplyTo: e.ReplyTo, Subject: e.Subject, Text: e.Text, HTML: e.HTML}
	switch {
	case e.From == "":
		return m, esp.Required(p + "from")
	case len(e.To) == 0:
		return m, esp.Required(p + "to")
	case e.Subject == "":
		return m, esp.Required(p + "subject")
	}
	for _, k := range sortedKeys(e.Headers) {
		m.Headers = append(m.Headers, esp.Header{Name: k, Value: e.Headers[k]})
	}
	var err error
	if m.Attachments, err = attachments(p, e.Attachments); err != nil {
		return m, err
	}
	if m.Metadata, err = tags(p, e.Tags); err != nil {
		return m, err
	}
	if e.ScheduledAt != "" {
		t, err := time.Parse(time.RFC3339, strings.ToUpper(e.ScheduledAt))
		if err != nil {
			return m, esp.Refused(p+"scheduled_at", "only an ISO 8601 date-time (2026-12-01T08:00:00Z), not natural language")
		}
		m.SendAt = t
	}
	return m, m.CheckLabels(p+"tags", p+"tags")
}

func (e *email) refuseUnsupported(p string) error {
	for _, f := range []struct {
		name, why string
		v         json.RawMessage
	}{
		{"template", "relayq keeps no templates; send the rendered html and text", e.Template},
		{"topic_id", "relayq keeps no contact topics", e.TopicID},
		{"react", "relayq renders no React; send the rendered html", e.React},
	} {
		if len(f.v) > 0 && string(f.v) != "null" {
			return esp.Refused(p+f.name, f.why)
		}
	}
	return nil
}

func attachments(p string, in []attachment) ([]esp.Attachment, error) {
	var out []esp.Attachment
	for i, a := range in {
		field := fmt.Sprintf("%sattachments[%d]", p, i)
		if len(a.Path) > 0 && string(a.Path) != "null" {
			return nil, esp.Refused(field+".path", "relayq fetches no URLs; send the content")
		}
		if a.Filename == "" {
			return nil, esp.Required(field + ".filename")
		}
		content, err := base64.StdEncoding.DecodeString(a.Content)
		if err != nil {
			return nil, esp.Invalid(field+".content", "not base64")
		}
		out = append(out, esp.Attachment{Filename: a.Filename, ContentType: a.ContentType, ContentID: a.ContentID, Content: content})
	}
	return out, nil
}

// tagName is Resend's rule for a tag's name and value: ASCII letters,
// digits, underscores and dashes, at most 256.
var tagName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

func tags(p string, in []tag) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(in))
	for i, t := range in {
		field := fmt.Sprintf("%stags[%d]", p, i)
		if !tagName.MatchString(t.Name) {
			return nil, esp.Invalid(field+".name", "ASCII letters, numbers, underscores or dashes, at most 256")
		}
		if t.Value != "" && !tagName.MatchString(t.Value) {
			return nil, esp.Invalid(field+".value", "ASCII letters, numbers, underscores or dashes, at most 256")
		}
		if _, dup := out[t.Name]; dup {
			return nil, esp.Invalid(field+".name", "%q given twice", t.Name)
		}
		out[t.Name] = t.Value
	}
	return out, nil
}
