package httpsubmit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"
	"time"

	"github.com/relayq/relayq/internal/esp"
	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/jsonkeys"
	"github.com/relayq/relayq/submission"
)

// jsonMessage is the application/json request body.
type jsonMessage struct {
	From        string            `json:"from"`
	To          []string          `json:"to"`
	Cc          []string          `json:"cc"`
	Bcc         []string          `json:"bcc"`
	ReplyTo     string            `json:"reply_to"`
	Subject     string            `json:"subject"`
	Text        string            `json:"text"`
	HTML        string            `json:"html"`
	Headers     map[string]string `json:"headers"`
	Attachments []jsonAttachment  `json:"attachments"`
	// SendAt holds the message until then (sendat.go).
	SendAt string `json:"send_at"`
	// Tags and Metadata are kept with the message (esp.CheckLabels'
	// limits), as the hosted APIs' tags and metadata are.
	Tags     []string          `json:"tags"`
	Metadata map[string]string `json:"metadata"`
}

type jsonAttachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	// Content is base64 in the JSON (encoding/json decodes []byte so).
	Content []byte `json:"content"`
}

// readJSON decodes and builds the message. The JSON may be larger than the
// message it describes (base64 attachments, escapes), so it is allowed
// twice the size limit; the built message is held to the limit itself.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request) (*submitted, *smtp.SMTPError) {
	if e := checkQuery(r, nil); e != nil {
		return nil, e
	}
	limit := s.acc.MaxMessageBytes()
	// Read whole (Decode would hold the whole value in its buffer too), so
	// that duplicate names can be looked for before decoding.
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 2*limit+64<<10))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, submission.ErrTooBig
		}
		return nil, malformed("reading the request: %v", err)
	}
	if k := jsonkeys.Duplicate(data); k != "" {
		return nil, malformed("bad JSON: duplicate key %q", k)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m jsonMessage
	if err := dec.Decode(&m); err != nil {
		return nil, malformed("bad JSON: %v", err)
	}
	if dec.More() {
		return nil, malformed("bad JSON: more than one object")
	}
	if err := m.message().CheckLabels("tags", "metadata"); err != nil {
		return nil, malformed("%v", err)
	}
	var buf bytes.Buffer
	sub, err := buildMIME(&buf, &m, s.clock.Now(), s.acc.Hostname())
	if err != nil {
		return nil, malformed("%v", err)
	}
	sub.body = &buf
	var e *smtp.SMTPError
	sub.hold, e = parseSendAt(m.SendAt)
	return sub, e
}

// buildMIME writes relayq's own JSON message as MIME (buildMessage).
func buildMIME(w io.Writer, m *jsonMessage, now time.Time, hostname string) (*submitted, error) {
	return buildMessage(w, m.message(), now, hostname)
}

// message is m in the neutral form every JSON API is built from, so that
// relayq's own API and the hosted ones make the same bytes of the same
// message. Extra headers go in name order.
func (m *jsonMessage) message() *esp.Message {
	e := &esp.Message{From: m.From, To: m.To, Cc: m.Cc, Bcc: m.Bcc, Subject: m.Subject, Text: m.Text, HTML: m.HTML,
		Tags: m.Tags, Metadata: m.Metadata}
	if m.ReplyTo != "" {
		e.ReplyTo = []string{m.ReplyTo}
	}
	names := make([]string, 0, len(m.Headers))
	for k := range m.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		e.Headers = append(e.Headers, esp.Header{Name: k, Value: m.Headers[k]})
	}
	for _, a := range m.Attachments {
		e.Attachments = append(e.Attachments, esp.Attachment{Filename: a.Filename, ContentType: a.ContentType, Content: a.Content})
	}
	return e
}
