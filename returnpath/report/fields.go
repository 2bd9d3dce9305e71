package report

import (
	"io"
	"net/mail"
	"strings"

	"github.com/emersion/go-message/textproto"
)

// deliveryStatus reads an RFC 3464 section 2.1 body: the per-message
// block, then one block per recipient. A block without Action or
// Final-Recipient is no recipient (section 2.3 makes both required).
func deliveryStatus(r io.Reader) []Recipient {
	blocks := fieldBlocks(r, maxRecipients+1)
	rcpts := []Recipient{}
	for i, h := range blocks {
		if i == 0 && !h.Has("Final-Recipient") {
			continue // the per-message fields
		}
		rc := Recipient{
			Final:     typedAddress(h.Get("Final-Recipient")),
			Original:  typedAddress(h.Get("Original-Recipient")),
			Action:    actions[strings.ToLower(firstWord(h.Get("Action")))],
			Status:    validStatus(firstWord(h.Get("Status"))),
			Reply:     diagnostic(h.Get("Diagnostic-Code")),
			RemoteMTA: typedAddress(h.Get("Remote-MTA")),
		}
		if rc.Final == "" || !h.Has("Action") {
			continue
		}
		if rc.Status == "" {
			rc.Status = findStatus(rc.Reply)
		}
		rcpts = append(rcpts, rc)
	}
	return rcpts
}

// feedbackReport reads an RFC 5965 section 3.1 machine-readable part.
func feedbackReport(r io.Reader) *Report {
	rep := &Report{}
	for _, h := range fieldBlocks(r, 1) {
		rep.FeedbackType = strings.ToLower(firstWord(h.Get("Feedback-Type")))
		rep.OriginalRcptTo = bareAddress(h.Get("Original-Rcpt-To"))
	}
	if rep.FeedbackType == "" {
		// Section 3.1 requires the field; a report without one is still a
		// complaint, of a kind it did not say.
		rep.FeedbackType = "other"
	}
	return rep
}

// original is what a report's returned original (message/rfc822 or
// text/rfc822-headers) says of itself: To names a complaint's recipient
// when the report does not (RFC 5965 section 2, item 3); Return-Path and
// Message-ID let a report sent to a fixed address be attributed.
type original struct {
	read                      bool
	To, ReturnPath, MessageID string
}

func originalHeader(r io.Reader) original {
	h, err := textproto.ReadHeader(bufioReader(io.LimitReader(r, maxHeaderBytes)))
	if err != nil && h.Len() == 0 {
		return original{read: true}
	}
	return original{read: true, To: bareAddress(h.Get("To")), ReturnPath: bareAddress(h.Get("Return-Path")),
		MessageID: oneLine(h.Get("Message-Id"))}
}

// typedAddress strips the address type of "rfc822; bob@example.net"
// (RFC 3464 section 2.3.2), and the angle brackets some servers add.
func typedAddress(v string) string {
	if _, a, ok := strings.Cut(v, ";"); ok {
		v = a
	}
	return strings.Trim(strings.TrimSpace(v), "<>")
}

// bareAddress is the address of a header field value, "" if none.
func bareAddress(v string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return ""
	}
	if a, err := mail.ParseAddress(v); err == nil {
		return a.Address
	}
	return strings.Trim(firstWord(v), "<>")
}

// diagnostic is the text of a Diagnostic-Code ("smtp; 550 5.1.1 ...").
func diagnostic(v string) string {
	if typ, text, ok := strings.Cut(v, ";"); ok && !strings.ContainsAny(typ, " \t") {
		v = text
	}
	return oneLine(v)
}

func firstWord(v string) string {
	f := strings.Fields(v)
	if len(f) == 0 {
		return ""
	}
	return strings.TrimSuffix(f[0], ";")
}

// oneLine folds whitespace runs (continuation lines included) into one
// space and caps the length: the text goes into one event field.
func oneLine(s string) string {
	const maxLine = 512
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxLine {
		s = s[:maxLine]
	}
	return strings.ToValidUTF8(s, "")
}
