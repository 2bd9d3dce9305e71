package sendgrid

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/mail"
	"sort"
	"time"

	"github.com/relayq/relayq/internal/esp"
)

// mailSend is the body of POST /v3/mail/send.
type mailSend struct {
	Personalizations []personalization `json:"personalizations"`
	From             *address          `json:"from"`
	ReplyTo          *address          `json:"reply_to"`
	ReplyToList      []address         `json:"reply_to_list"`
	Subject          string            `json:"subject"`
	Content          []content         `json:"content"`
	Attachments      []attachment      `json:"attachments"`
	Headers          map[string]string `json:"headers"`
	Categories       []string          `json:"categories"`
	CustomArgs       map[string]string `json:"custom_args"`
	SendAt           int64             `json:"send_at"`
	MailSettings     settings          `json:"mail_settings"`
	TrackingSettings settings          `json:"tracking_settings"`
	TemplateID       json.RawMessage   `json:"template_id"`
	Sections         json.RawMessage   `json:"sections"`
	ASM              json.RawMessage   `json:"asm"`
	BatchID          json.RawMessage   `json:"batch_id"`
	IPPoolName       json.RawMessage   `json:"ip_pool_name"`
}

type personalization struct {
	To                  []address         `json:"to"`
	Cc                  []address         `json:"cc"`
	Bcc                 []address         `json:"bcc"`
	From                *address          `json:"from"`
	Subject             string            `json:"subject"`
	Headers             map[string]string `json:"headers"`
	CustomArgs          map[string]string `json:"custom_args"`
	SendAt              int64             `json:"send_at"`
	Substitutions       json.RawMessage   `json:"substitutions"`
	DynamicTemplateData json.RawMessage   `json:"dynamic_template_data"`
}

type address struct {
	Email string `json:"email"`
	Name  string `json:"name"`
}

type content struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

type attachment struct {
	Content     string `json:"content"`
	Type        string `json:"type"`
	Filename    string `json:"filename"`
	Disposition string `json:"disposition"`
	ContentID   string `json:"content_id"`
}

// settings is mail_settings or tracking_settings: each named setting an
// object whose "enable" says whether it is on; the rest of each is the
// setting's own and is not read when it is off.
type settings map[string]map[string]json.RawMessage

// MaxPersonalizations is SendGrid's limit per request.
const MaxPersonalizations = 1000

// Parse translates the body of POST /v3/mail/send: one message per
// personalization, or the first error.
func Parse(data []byte) ([]esp.Message, error) {
	var r mailSend
	if err := esp.Decode(data, &r); err != nil {
		return nil, err
	}
	if err := r.refuseUnsupported(); err != nil {
		return nil, err
	}
	switch {
	case len(r.Personalizations) == 0:
		return nil, esp.Required("personalizations")
	case len(r.Personalizations) > MaxPersonalizations:
		return nil, esp.Invalid("personalizations", "at most %d", MaxPersonalizations)
	}
	base, err := r.common()
	if err != nil {
		return nil, err
	}
	out := make([]esp.Message, len(r.Personalizations))
	for i := range r.Personalizations {
		if out[i], err = r.Personalizations[i].message(base, r.From, fmt.Sprintf("personalizations.%d", i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// common is what every personalization's message shares.
func (r *mailSend) common() (esp.Message, error) {
	m := esp.Message{Subject: r.Subject, Tags: r.Categories, Metadata: r.CustomArgs}
	if r.SendAt != 0 {
		m.SendAt = time.Unix(r.SendAt, 0).UTC()
	}
	if r.ReplyTo != nil {
		m.ReplyTo = append(m.ReplyTo, r.ReplyTo.String())
	}
	for _, a := range r.ReplyToList {
		m.ReplyTo = append(m.ReplyTo, a.String())
	}
	for i, c := range r.Content {
		switch c.Type {
		case "text/plain":
			m.Text = c.Value
		case "text/html":
			m.HTML = c.Value
		default:
			return m, esp.Invalid(fmt.Sprintf("content.%d.type", i), "text/plain or text/html")
		}
	}
	if m.Text == "" && m.HTML == "" {
		return m, esp.Required("content")
	}
	m.Headers = headers(nil, r.Headers)
	for i, a := range r.Attachments {
		field := fmt.Sprintf("attachments.%d", i)
		b, err := base64.StdEncoding.DecodeString(a.Content)
		switch {
		case err != nil:
			return m, esp.Invalid(field+".content", "not base64")
		case a.Filename == "":
			return m, esp.Required(field + ".filename")
		case a.Disposition == "inline" && a.ContentID == "":
			return m, esp.Required(field + ".content_id")
		case a.Disposition != "" && a.Disposition != "inline" && a.Disposition != "attachment":
			return m, esp.Invalid(field+".disposition", "inline or attachment")
		}
		att := esp.Attachment{Filename: a.Filename, ContentType: a.Type, Content: b}
		if a.Disposition == "inline" {
			att.ContentID = a.ContentID
		}
		m.Attachments = append(m.Attachments, att)
	}
	return m, nil
}

func (p *personalization) message(base esp.Message, from *address, field string) (esp.Message, error) {
	switch {
	case len(p.Substitutions) > 0 && string(p.Substitutions) != "null":
		return base, esp.Refused(field+".substitutions", "relayq keeps no templates; send the rendered content")
	case len(p.DynamicTemplateData) > 0 && string(p.DynamicTemplateData) != "null":
		return base, esp.Refused(field+".dynamic_template_data", "relayq keeps no templates; send the rendered content")
	}
	m := base
	if p.From != nil {
		from = p.From
	}
	fromField := "from.email"
	if p.From != nil {
		fromField = field + ".from.email"
	}
	if from == nil || from.Email == "" {
		return m, esp.Required(fromField)
	}
	if _, err := mail.ParseAddress(from.Email); err != nil {
		return m, esp.Invalid(fromField, "does not contain a valid address")
	}
	m.From = from.String()
	for _, l := range []struct {
		name string
		in   []address
		out  *[]string
	}{{"to", p.To, &m.To}, {"cc", p.Cc, &m.Cc}, {"bcc", p.Bcc, &m.Bcc}} {
		*l.out = nil
		for j, a := range l.in {
			if _, err := mail.ParseAddress(a.Email); err != nil {
				return m, esp.Invalid(fmt.Sprintf("%s.%s.%d.email", field, l.name, j), "does not contain a valid address")
			}
			*l.out = append(*l.out, a.String())
		}
	}
	if len(m.To) == 0 {
		return m, esp.Required(field + ".to")
	}
	if p.Subject != "" {
		m.Subject = p.Subject
	}
	if m.Subject == "" {
		return m, esp.Required("subject")
	}
	if p.SendAt != 0 {
		m.SendAt = time.Unix(p.SendAt, 0).UTC()
	}
	m.Headers = headers(base.Headers, p.Headers)
	if len(p.CustomArgs) > 0 {
		m.Metadata = map[string]string{}
		for k, v := range base.Metadata {
			m.Metadata[k] = v
		}
		for k, v := range p.CustomArgs {
			m.Metadata[k] = v
		}
	}
	return m, m.CheckLabels("categories", "custom_args")
}

// headers is base with extra's fields added in name order.
func headers(base []esp.Header, extra map[string]string) []esp.Header {
	out := append([]esp.Header(nil), base...)
	names := make([]string, 0, len(extra))
	for k := range extra {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		out = append(out, esp.Header{Name: k, Value: extra[k]})
	}
	return out
}

func (a address) String() string {
	return (&mail.Address{Name: a.Name, Address: a.Email}).String()
}

func (r *mailSend) refuseUnsupported() error {
	for _, f := range []struct {
		name, why string
		v         json.RawMessage
	}{
		{"template_id", "relayq keeps no templates; send the rendered content", r.TemplateID},
		{"sections", "relayq keeps no templates; send the rendered content", r.Sections},
		{"asm", "relayq keeps no unsubscribe groups", r.ASM},
		{"batch_id", "relayq keeps no batches to cancel", r.BatchID},
		{"ip_pool_name", "relayq chooses no IP pools by name", r.IPPoolName},
	} {
		if len(f.v) > 0 && string(f.v) != "null" {
			return esp.Refused(f.name, f.why)
		}
	}
	for _, s := range []struct {
		name string
		set  settings
	}{{"mail_settings", r.MailSettings}, {"tracking_settings", r.TrackingSettings}} {
		names := make([]string, 0, len(s.set))
		for k := range s.set {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if string(s.set[k]["enable"]) == "true" {
				return esp.Refused(s.name+"."+k, "relayq does not rewrite or divert messages")
			}
		}
	}
	return nil
}
