package report

import (
	"bytes"
	"fmt"
)

// Bounce is an RFC 3464 report that delivery to o.Rcpt failed after the
// message was accepted, with enhanced status code status (class 5) and the
// receiving side's reply text. It is written from the null sender's point
// of view: the caller sends it with MAIL FROM:<> (RFC 5321 section 4.5.5),
// so that it can never bounce in turn.
func Bounce(o Original, rp Reporter, status [3]int, text string) []byte {
	code := fmt.Sprintf("%d.%d.%d", status[0], status[1], status[2])
	reply := fmt.Sprintf("%d %s %s", replyCodeFor(status), code, oneLine(text))
	header := [][2]string{
		{"From", fmt.Sprintf("Mail Delivery System <MAILER-DAEMON@%s>", oneLine(rp.Host))},
		{"To", "<" + oneLine(o.From) + ">"},
		{"Subject", "Undelivered Mail Returned to Sender"},
	}
	var human bytes.Buffer
	fmt.Fprintf(&human, "This is the mail system at host %s.\r\n\r\n", oneLine(rp.Host))
	human.WriteString("Your message was accepted, but could not be delivered to the\r\n")
	human.WriteString("recipient below. The original message's headers are attached.\r\n\r\n")
	fmt.Fprintf(&human, "<%s>: %s\r\n", oneLine(o.Rcpt), reply)

	// RFC 3464 section 2.2: the per-message fields, a blank line, then one
	// group of per-recipient fields (section 2.3) for each recipient.
	var status3464 bytes.Buffer
	fmt.Fprintf(&status3464, "Reporting-MTA: dns; %s\r\n", oneLine(rp.Host))
	fmt.Fprintf(&status3464, "Arrival-Date: %s\r\n\r\n", o.Arrival.Format(dateLayout))
	fmt.Fprintf(&status3464, "Final-Recipient: rfc822; %s\r\n", oneLine(o.Rcpt))
	status3464.WriteString("Action: failed\r\n")
	fmt.Fprintf(&status3464, "Status: %s\r\n", code)
	fmt.Fprintf(&status3464, "Diagnostic-Code: smtp; %s\r\n", reply)
	fmt.Fprintf(&status3464, "Last-Attempt-Date: %s\r\n", rp.Date.Format(dateLayout))

	parts := []part{
		{"text/plain; charset=us-ascii", human.Bytes()},
		{"message/delivery-status", status3464.Bytes()},
		// RFC 3462 (now 6522) section 3: the third part returns the
		// original, here only its headers (text/rfc822-headers).
		{"text/rfc822-headers", headersOf(o.Data)},
	}
	return rp.write("delivery-status", "bounce", header, parts, o)
}

// replyCodeFor is the SMTP reply code a receiving server would have given
// for status: 552 for a full mailbox or a message too big (RFC 3463
// X.2.2, X.3.4, as RFC 5321 section 4.2.2 pairs them), 550 otherwise.
func replyCodeFor(status [3]int) int {
	switch {
	case status[1] == 2 && status[2] == 2, status[1] == 3 && status[2] == 4:
		return 552
	}
	return 550
}
