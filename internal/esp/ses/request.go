package ses

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/mail"
	"strings"

	"github.com/relayq/relayq/internal/esp"
)

// sendEmail is the body of POST /v2/email/outbound-emails.
type sendEmail struct {
	FromEmailAddress string `json:"FromEmailAddress"`
	Destination      *struct {
		ToAddresses  []string `json:"ToAddresses"`
		CcAddresses  []string `json:"CcAddresses"`
		BccAddresses []string `json:"BccAddresses"`
	} `json:"Destination"`
	ReplyToAddresses []string `json:"ReplyToAddresses"`
	Content          struct {
		Simple   *simple                `json:"Simple"`
		Raw      *struct{ Data string } `json:"Raw"`
		Template json.RawMessage        `json:"Template"`
	} `json:"Content"`
	EmailTags            []tag  `json:"EmailTags"`
	ConfigurationSetName string `json:"ConfigurationSetName"`

	FromEmailAddressIdentityArn               json.RawMessage `json:"FromEmailAddressIdentityArn"`
	FeedbackForwardingEmailAddress            json.RawMessage `json:"FeedbackForwardingEmailAddress"`
	FeedbackForwardingEmailAddressIdentityArn json.RawMessage `json:"FeedbackForwardingEmailAddressIdentityArn"`
	ListManagementOptions                     json.RawMessage `json:"ListManagementOptions"`
	EndpointID                                json.RawMessage `json:"EndpointId"`
	TenantName                                json.RawMessage `json:"TenantName"`
}

type text struct {
	Data    string `json:"Data"`
	Charset string `json:"Charset"`
}

type simple struct {
	Subject *text `json:"Subject"`
	Body    struct {
		Text *text `json:"Text"`
		HTML *text `json:"Html"`
	} `json:"Body"`
	Headers     []struct{ Name, Value string } `json:"Headers"`
	Attachments []attachment                   `json:"Attachments"`
}

type attachment struct {
	RawContent              string `json:"RawContent"`
	FileName                string `json:"FileName"`
	ContentType             string `json:"ContentType"`
	ContentDisposition      string `json:"ContentDisposition"`
	ContentID               string `json:"ContentId"`
	ContentDescription      string `json:"ContentDescription"`
	ContentTransferEncoding string `json:"ContentTransferEncoding"`
}

type tag struct {
	Name  string `json:"Name"`
	Value string `json:"Value"`
}

// Parse translates the body of POST /v2/email/outbound-emails.
func Parse(data []byte) (esp.Message, error) {
	var r sendEmail
	if err := esp.Decode(data, &r); err != nil {
		return esp.Message{}, err
	}
	if err := r.refuseUnsupported(); err != nil {
		return esp.Message{}, err
	}
	m := esp.Message{From: r.FromEmailAddress, ReplyTo: r.ReplyToAddresses, Stream: r.ConfigurationSetName}
	if d := r.Destination; d != nil {
		m.To, m.Cc, m.Bcc = d.ToAddresses, d.CcAddresses, d.BccAddresses
	}
	for _, f := range []struct {
		name  string
		addrs []string
	}{{"FromEmailAddress", []string{m.From}}, {"Destination", append(append(append([]string(nil), m.To...), m.Cc...), m.Bcc...)}, {"ReplyToAddresses", m.ReplyTo}} {
		for _, a := range f.addrs {
			if a == "" && f.name == "FromEmailAddress" && r.Content.Raw != nil {
				continue // the raw message's own From
			}
			if _, err := mail.ParseAddress(a); err != nil {
				return m, esp.Invalid(f.name, "%q is not an address", a)
			}
		}
	}
	for i, t := range r.EmailTags {
		if t.Name == "" {
			return m, esp.Required(fmt.Sprintf("EmailTags[%d].Name", i))
		}
		if m.Metadata == nil {
			m.Metadata = map[string]string{}
		}
		m.Metadata[t.Name] = t.Value
	}
	switch c := r.Content; {
	case c.Simple != nil && c.Raw != nil:
		return m, esp.Invalid("Content", "give one of Simple, Raw and Template")
	case c.Raw != nil:
		raw, err := base64.StdEncoding.DecodeString(c.Raw.Data)
		switch {
		case err != nil:
			return m, esp.Invalid("Content.Raw.Data", "not base64")
		case len(raw) == 0:
			return m, esp.Required("Content.Raw.Data")
		}
		m.Raw = raw
	case c.Simple != nil:
		if err := c.Simple.fill(&m); err != nil {
			return m, err
		}
		if m.From == "" {
			return m, esp.Required("FromEmailAddress")
		}
		if len(m.To)+len(m.Cc)+len(m.Bcc) == 0 {
			return m, esp.Required("Destination")
		}
	default:
		return m, esp.Required("Content")
	}
	return m, m.CheckLabels("EmailTags", "EmailTags")
}

func (s *simple) fill(m *esp.Message) error {
	for _, t := range []struct {
		field string
		v     *text
		out   *string
	}{{"Content.Simple.Subject", s.Subject, &m.Subject}, {"Content.Simple.Body.Text", s.Body.Text, &m.Text}, {"Content.Simple.Body.Html", s.Body.HTML, &m.HTML}} {
		if t.v == nil {
			continue
		}
		if cs := strings.ToUpper(t.v.Charset); cs != "" && cs != "UTF-8" && cs != "UTF8" && cs != "US-ASCII" {
			return esp.Refused(t.field+".Charset", "only UTF-8 text is taken")
		}
		*t.out = t.v.Data
	}
	if m.Text == "" && m.HTML == "" {
		return esp.Required("Content.Simple.Body")
	}
	for _, h := range s.Headers {
		m.Headers = append(m.Headers, esp.Header{Name: h.Name, Value: h.Value})
	}
	for i, a := range s.Attachments {
		field := fmt.Sprintf("Content.Simple.Attachments[%d]", i)
		switch {
		case a.FileName == "":
			return esp.Required(field + ".FileName")
		case a.ContentDescription != "":
			return esp.Refused(field+".ContentDescription", "not written to the part")
		case a.ContentTransferEncoding != "" && !strings.EqualFold(a.ContentTransferEncoding, "BASE64"):
			return esp.Refused(field+".ContentTransferEncoding", "attachments are sent base64")
		case a.ContentDisposition != "" && !strings.EqualFold(a.ContentDisposition, "ATTACHMENT") && !strings.EqualFold(a.ContentDisposition, "INLINE"):
			return esp.Invalid(field+".ContentDisposition", "ATTACHMENT or INLINE")
		case strings.EqualFold(a.ContentDisposition, "INLINE") && a.ContentID == "":
			return esp.Required(field + ".ContentId")
		}
		content, err := base64.StdEncoding.DecodeString(a.RawContent)
		if err != nil {
			return esp.Invalid(field+".RawContent", "not base64")
		}
		att := esp.Attachment{Filename: a.FileName, ContentType: a.ContentType, Content: content}
		if strings.EqualFold(a.ContentDisposition, "INLINE") {
			att.ContentID = a.ContentID
		}
		m.Attachments = append(m.Attachments, att)
	}
	return nil
}

func (r *sendEmail) refuseUnsupported() error {
	for _, f := range []struct {
		name, why string
		v         json.RawMessage
	}{
		{"Content.Template", "relayq keeps no templates; send Simple or Raw content", r.Content.Template},
		{"FromEmailAddressIdentityArn", "relayq has no SES identities", r.FromEmailAddressIdentityArn},
		{"FeedbackForwardingEmailAddress", "bounces come back to relayq's return path", r.FeedbackForwardingEmailAddress},
		{"FeedbackForwardingEmailAddressIdentityArn", "relayq has no SES identities", r.FeedbackForwardingEmailAddressIdentityArn},
		{"ListManagementOptions", "relayq keeps no contact lists", r.ListManagementOptions},
		{"EndpointId", "relayq has no multi-region endpoints", r.EndpointID},
		{"TenantName", "relayq has no SES tenants", r.TenantName},
	} {
		if len(f.v) > 0 && string(f.v) != "null" {
			return esp.Refused(f.name, f.why)
		}
	}
	return nil
}
