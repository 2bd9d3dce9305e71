package postmark

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/mail"
	"strings"

	"github.com/relayq/relayq/internal/esp"
)

// email is the body of POST /email, one item of /email/batch.
type email struct {
	From          string            `json:"From"`
	To            string            `json:"To"`
	Cc            string            `json:"Cc"`
	Bcc           string            `json:"Bcc"`
	Subject       string            `json:"Subject"`
	Tag           string            `json:"Tag"`
	HTMLBody      string            `json:"HtmlBody"`
	TextBody      string            `json:"TextBody"`
	ReplyTo       string            `json:"ReplyTo"`
	Metadata      map[string]string `json:"Metadata"`
	Headers       []header          `json:"Headers"`
	Attachments   []attachment      `json:"Attachments"`
	MessageStream string            `json:"MessageStream"`
	TrackOpens    *bool             `json:"TrackOpens"`
	TrackLinks    string            `json:"TrackLinks"`
	// Template fields are Postmark's /email/withTemplate; sent here they
	// would be ignored by Postmark's binder, so relayq names them.
	TemplateID    json.RawMessage `json:"TemplateId"`
	TemplateAlias json.RawMessage `json:"TemplateAlias"`
	TemplateModel json.RawMessage `json:"TemplateModel"`
	InlineCSS     json.RawMessage `json:"InlineCss"`
}

type header struct {
	Name  string `json:"Name"`
	Value string `json:"Value"`
}

type attachment struct {
	Name          string  `json:"Name"`
	Content       string  `json:"Content"`
	ContentType   string  `json:"ContentType"`
	ContentID     *string `json:"ContentID"`
	ContentLength *int64  `json:"ContentLength"`
	Disposition   *string `json:"Disposition"`
}

// MaxBatch is how many messages one /email/batch may hold (Postmark's
// limit, ErrorCode 410 over it).
const MaxBatch = 500

// ParseEmail translates the body of POST /email.
func ParseEmail(data []byte) (esp.Message, error) {
	var e email
	if err := esp.Decode(data, &e); err != nil {
		return esp.Message{}, err
	}
	return e.message()
}

// ParseBatch translates the body of POST /email/batch: err refuses the
// whole request (not a JSON array of objects, over MaxBatch); otherwise
// each item has its Message or its own error in errs.
func ParseBatch(data []byte) (msgs []esp.Message, errs []error, err error) {
	var items []email
	if err := esp.Decode(data, &items); err != nil {
		return nil, nil, err
	}
	if len(items) > MaxBatch {
		return nil, nil, &esp.Error{Kind: esp.TooLarge, Detail: fmt.Sprintf("a batch holds at most %d messages", MaxBatch)}
	}
	msgs, errs = make([]esp.Message, len(items)), make([]error, len(items))
	for i := range items {
		msgs[i], errs[i] = items[i].message()
	}
	return msgs, errs, nil
}

func (e *email) message() (esp.Message, error) {
	if err := e.refuseUnsupported(); err != nil {
		return esp.Message{}, err
	}
	m := esp.Message{Subject: e.Subject, Text: e.TextBody, HTML: e.HTMLBody, Metadata: e.Metadata, Stream: e.MessageStream}
	if e.From == "" {
		return m, esp.Required("From")
	}
	from, err := list("From", e.From)
	if err != nil {
		return m, err
	}
	if len(from) != 1 {
		return m, esp.Invalid("From", "one address")
	}
	m.From = from[0]
	for _, f := range []struct {
		name string
		in   string
		out  *[]string
	}{{"To", e.To, &m.To}, {"Cc", e.Cc, &m.Cc}, {"Bcc", e.Bcc, &m.Bcc}, {"ReplyTo", e.ReplyTo, &m.ReplyTo}} {
		if *f.out, err = list(f.name, f.in); err != nil {
			return m, err
		}
	}
	if len(m.To)+len(m.Cc)+len(m.Bcc) == 0 {
		return m, esp.Required("To")
	}
	if m.Text == "" && m.HTML == "" {
		return m, &esp.Error{Kind: esp.Missing, Field: "HtmlBody", Detail: "provide either HtmlBody or TextBody or both"}
	}
	if e.Tag != "" {
		m.Tags = []string{e.Tag}
	}
	for i, h := range e.Headers {
		if h.Name == "" {
			return m, esp.Required(fmt.Sprintf("Headers[%d].Name", i))
		}
		m.Headers = append(m.Headers, esp.Header{Name: h.Name, Value: h.Value})
	}
	if m.Attachments, err = attachments(e.Attachments); err != nil {
		return m, err
	}
	return m, m.CheckLabels("Tag", "Metadata")
}

// refuseUnsupported names the first field asking for what relayq does
// not do: tracking rewrites the message, templates are rendered by
// Postmark's own store.
func (e *email) refuseUnsupported() error {
	switch {
	case e.TrackOpens != nil && *e.TrackOpens:
		return esp.Refused("TrackOpens", "relayq does not rewrite messages to track opens")
	case e.TrackLinks != "" && e.TrackLinks != "None":
		return esp.Refused("TrackLinks", "relayq does not rewrite links to track clicks")
	}
	for _, f := range []struct {
		name string
		v    json.RawMessage
	}{{"TemplateId", e.TemplateID}, {"TemplateAlias", e.TemplateAlias}, {"TemplateModel", e.TemplateModel}, {"InlineCss", e.InlineCSS}} {
		if len(f.v) > 0 && string(f.v) != "null" {
			return esp.Refused(f.name, "relayq keeps no templates; send the rendered HtmlBody and TextBody")
		}
	}
	return nil
}

// list parses a Postmark address field: an RFC 5322 address list.
func list(field, v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	addrs, err := mail.ParseAddressList(v)
	if err != nil {
		return nil, esp.Invalid(field, "not an address list: %v", err)
	}
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out, nil
}

func attachments(in []attachment) ([]esp.Attachment, error) {
	var out []esp.Attachment
	for i, a := range in {
		field := fmt.Sprintf("Attachments[%d]", i)
		if a.Name == "" {
			return nil, esp.Required(field + ".Name")
		}
		content, err := base64.StdEncoding.DecodeString(a.Content)
		if err != nil {
			return nil, esp.Invalid(field+".Content", "not base64")
		}
		if a.ContentLength != nil && *a.ContentLength != int64(len(content)) {
			return nil, esp.Invalid(field+".ContentLength", "is %d, the content is %d bytes", *a.ContentLength, len(content))
		}
		att := esp.Attachment{Filename: a.Name, ContentType: a.ContentType, Content: content}
		if a.ContentID != nil {
			att.ContentID = strings.TrimPrefix(*a.ContentID, "cid:")
		}
		if a.Disposition != nil {
			switch d := strings.ToLower(*a.Disposition); {
			case d == "inline" && att.ContentID == "":
				return nil, esp.Required(field + ".ContentID")
			case d != "inline" && d != "attachment":
				return nil, esp.Invalid(field+".Disposition", "attachment or inline")
			}
		}
		out = append(out, att)
	}
	return out, nil
}
