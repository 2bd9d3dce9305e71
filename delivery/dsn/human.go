package dsn

import (
	"bytes"
	"fmt"

	"github.com/relayq/relayq/smtpcodes"
)

// textWidth is where the human-readable text wraps.
const textWidth = 72

// sections says what to tell the sender about recipients with each action,
// gravest news first.
var sections = []struct{ action, intro string }{
	{ActionFailed, "Your message could not be delivered to the recipients below. " +
		"The mail system has given up on them and will not try again."},
	{ActionDelayed, "Your message has not yet been delivered to the recipients below. " +
		"The mail system is still trying; you do not need to send it again."},
	{ActionDelivered, "Your message was delivered to the recipients below."},
	{ActionRelayed, "Your message was passed on to the recipients below by a system " +
		"that may not send further notices."},
	{ActionExpanded, "Your message was delivered to the recipients below, which " +
		"forwarded it on to further addresses."},
}

// humanText is the text/plain first part (RFC 6522 §3): in plain English,
// which recipients failed or are delayed and why. It is UTF-8 and may hold
// non-ASCII addresses and diagnostics as they are.
func humanText(r *Report, orig *returned) []byte {
	var b bytes.Buffer
	wrap(&b, "", "This is the mail system at host "+smtpcodes.OneLine(r.ReportingMTA)+".", textWidth)
	for _, s := range sections {
		if !r.has(s.action) {
			continue
		}
		b.WriteString("\r\n")
		wrap(&b, "", s.intro, textWidth)
		for _, rc := range r.Recipients {
			if rc.Action != s.action {
				continue
			}
			b.WriteString("\r\n")
			wrap(&b, "", "<"+smtpcodes.OneLine(rc.Final)+">", textWidth)
			wrap(&b, "    ", why(rc), textWidth)
			if rc.Action == ActionDelayed && !rc.WillRetryUntil.IsZero() {
				wrap(&b, "    ", "Will keep trying until "+formatDate(rc.WillRetryUntil)+".", textWidth)
			}
		}
	}
	b.WriteString("\r\n")
	if r.QueueID != "" {
		wrap(&b, "", "The queue ID of your message was "+smtpcodes.OneLine(r.QueueID)+".", textWidth)
	}
	switch {
	case orig == nil:
	case r.ReturnFull && orig.truncated:
		wrap(&b, "", fmt.Sprintf("The first %d bytes of your message are attached.", len(orig.body)), textWidth)
	case r.ReturnFull:
		wrap(&b, "", "Your message is attached.", textWidth)
	case orig.truncated:
		wrap(&b, "", fmt.Sprintf("The first %d bytes of the headers of your message are attached.", len(orig.body)), textWidth)
	default:
		wrap(&b, "", "The headers of your message are attached.", textWidth)
	}
	return b.Bytes()
}

// why explains one recipient's status in a line: who said what.
func why(rc Recipient) string {
	d := smtpcodes.OneLine(rc.Diagnostic)
	switch {
	case d == "":
		return "Status " + rc.Status + "."
	case rc.RemoteMTA != "":
		return "Host " + smtpcodes.OneLine(rc.RemoteMTA) + " said: " + d
	}
	return d
}
