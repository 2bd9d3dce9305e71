package report

import (
	"bytes"
	"fmt"
)

// UserAgent is the User-Agent field of a feedback report (RFC 5965 section
// 3.1: the name and version of the program that generated the report). It
// is fixed, not the build's version, so reports are the same in every build.
const UserAgent = "fakemx/1"

// Complaint is an RFC 5965 feedback report of feedbackType (abuse, fraud,
// virus, other; RFC 6430's not-spam) about o, as a mailbox provider's
// feedback loop sends it when o.Rcpt marks the message as spam.
func Complaint(o Original, rp Reporter, feedbackType string) []byte {
	header := [][2]string{
		{"From", fmt.Sprintf("Feedback Loop <fbl@%s>", oneLine(rp.Host))},
		{"To", "<" + oneLine(o.From) + ">"},
		{"Subject", "Complaint about a message to " + oneLine(o.Rcpt)},
	}
	var human bytes.Buffer
	fmt.Fprintf(&human, "This is an email %s report for a message received from IP\r\n", oneLine(feedbackType))
	fmt.Fprintf(&human, "%s on %s.\r\n", oneLine(o.ClientIP), o.Arrival.Format(dateLayout))
	human.WriteString("The recipient marked it as unwanted; the message is attached.\r\n")

	// RFC 5965 section 3.1: Feedback-Type, User-Agent and Version are
	// required; section 3.2 lists Original-Mail-From, Original-Rcpt-To,
	// Arrival-Date and Source-IP among the optional fields, all of which
	// a receiver of the report needs to find the sender's own record.
	var fb bytes.Buffer
	fmt.Fprintf(&fb, "Feedback-Type: %s\r\n", oneLine(feedbackType))
	fmt.Fprintf(&fb, "User-Agent: %s\r\n", UserAgent)
	fb.WriteString("Version: 1\r\n")
	fmt.Fprintf(&fb, "Original-Mail-From: <%s>\r\n", oneLine(o.From))
	fmt.Fprintf(&fb, "Original-Rcpt-To: <%s>\r\n", oneLine(o.Rcpt))
	fmt.Fprintf(&fb, "Arrival-Date: %s\r\n", o.Arrival.Format(dateLayout))
	if o.ClientIP != "" {
		fmt.Fprintf(&fb, "Source-IP: %s\r\n", oneLine(o.ClientIP))
	}
	fmt.Fprintf(&fb, "Reporting-MTA: dns; %s\r\n", oneLine(rp.Host))

	// RFC 5965 section 2 (d): the third part is the whole message as
	// message/rfc822, or its header section as text/rfc822-headers. The
	// whole message goes only when it is 7-bit, so the report can be sent
	// to any server (a message/rfc822 part may not be encoded, RFC 2046
	// section 5.2.1).
	original := part{"message/rfc822", crlf(o.Data)}
	if !is7bit(o.Data) {
		original = part{"text/rfc822-headers", headersOf(o.Data)}
	}
	parts := []part{
		{"text/plain; charset=us-ascii", human.Bytes()},
		{"message/feedback-report", fb.Bytes()},
		original,
	}
	return rp.write("feedback-report", "complaint", header, parts, o)
}
