package esp

import "time"

// Message is one message as a hosted API describes it, in relayq's
// terms. Addresses are as the provider gave them ("Name <a@b>" or a
// bare address); the builder parses them.
type Message struct {
	From        string
	To, Cc, Bcc []string
	ReplyTo     []string
	Subject     string
	Text, HTML  string
	Headers     []Header
	Attachments []Attachment
	Tags        []string
	Metadata    map[string]string
	Stream      string    // the provider's stream (Postmark MessageStream), "" for none
	SendAt      time.Time // zero: send now
	Raw         []byte    // a whole RFC 5322 message (SES Raw); the other content fields are then empty
}

// Header is one header field the request adds, in the order given.
type Header struct{ Name, Value string }

// Attachment is one file. ContentID, when set, makes it an inline part
// the HTML refers to as cid:ContentID.
type Attachment struct {
	Filename    string
	ContentType string
	ContentID   string
	Content     []byte
}

// Limits on what relayq keeps with a message besides its bytes.
const (
	MaxTags          = 10
	MaxTagBytes      = 256
	MaxMetadata      = 20
	MaxMetadataBytes = 2048 // keys and values together
)

// CheckLabels refuses tags and metadata over the limits, naming field
// (the provider's name for them).
func (m *Message) CheckLabels(tagField, metaField string) error {
	if len(m.Tags) > MaxTags {
		return Invalid(tagField, "at most %d tags", MaxTags)
	}
	for _, t := range m.Tags {
		if t == "" || len(t) > MaxTagBytes || !printable(t) {
			return Invalid(tagField, "a tag is 1 to %d printable characters", MaxTagBytes)
		}
	}
	if len(m.Metadata) > MaxMetadata {
		return Invalid(metaField, "at most %d keys", MaxMetadata)
	}
	n := 0
	for k, v := range m.Metadata {
		n += len(k) + len(v)
		if k == "" || !printable(k) || !printable(v) {
			return Invalid(metaField, "keys and values are printable text, keys not empty")
		}
	}
	if n > MaxMetadataBytes {
		return Invalid(metaField, "keys and values together at most %d bytes", MaxMetadataBytes)
	}
	return nil
}

// printable: no control characters (a header line break among them).
func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
