package report

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// Original is what the report is about: one accepted message and the one
// recipient it reports on.
type Original struct {
	// ID is the accepting server's message ID, used to make the report's
	// Message-ID and MIME boundary unique and stable.
	ID string
	// From and Rcpt are the envelope sender and the recipient reported on.
	From, Rcpt string
	// ClientIP is where the message came from (Source-IP of a complaint).
	ClientIP string
	// Arrival is when the message was accepted.
	Arrival time.Time
	// Data is the message as received.
	Data []byte
}

// Reporter is who writes the report and when.
type Reporter struct {
	// Host is the reporting MTA's name (Reporting-MTA, the From domain).
	Host string
	// Date is when the report is written.
	Date time.Time
	// Seq tells apart several reports about the same message.
	Seq int
}

// dateLayout is RFC 5322 section 3.3's date-time.
const dateLayout = "Mon, 02 Jan 2006 15:04:05 -0700"

// part is one body part of a multipart/report.
type part struct {
	contentType string
	body        []byte
}

// write assembles a multipart/report message of reportType from its header
// fields (in order) and parts.
func (rp Reporter) write(reportType, kind string, header [][2]string, parts []part, o Original) []byte {
	boundary := fmt.Sprintf("fakemx-%s-%s-%d", kind, oneLine(o.ID), rp.Seq)
	var b bytes.Buffer
	for _, f := range header {
		fmt.Fprintf(&b, "%s: %s\r\n", f[0], f[1])
	}
	fmt.Fprintf(&b, "Date: %s\r\n", rp.Date.Format(dateLayout))
	fmt.Fprintf(&b, "Message-ID: <%s.%s.%d@%s>\r\n", kind, oneLine(o.ID), rp.Seq, oneLine(rp.Host))
	// RFC 3834 section 5: a report is an automatic reply, so no
	// auto-responder answers it.
	b.WriteString("Auto-Submitted: auto-replied\r\n")
	b.WriteString("MIME-Version: 1.0\r\n")
	fmt.Fprintf(&b, "Content-Type: multipart/report; report-type=%s;\r\n\tboundary=\"%s\"\r\n\r\n", reportType, boundary)
	b.WriteString("This is a MIME-encapsulated message.\r\n")
	for _, p := range parts {
		fmt.Fprintf(&b, "\r\n--%s\r\nContent-Type: %s\r\n", boundary, p.contentType)
		if !is7bit(p.body) {
			b.WriteString("Content-Transfer-Encoding: 8bit\r\n")
		}
		b.WriteString("\r\n")
		b.Write(p.body)
		if !bytes.HasSuffix(p.body, []byte("\r\n")) {
			b.WriteString("\r\n")
		}
	}
	fmt.Fprintf(&b, "\r\n--%s--\r\n", boundary)
	return b.Bytes()
}

// headersOf returns the header section of a message, up to and including
// the blank line that ends it (or all of data when it has no body).
func headersOf(data []byte) []byte {
	data = crlf(data)
	if i := bytes.Index(data, []byte("\r\n\r\n")); i >= 0 {
		return data[:i+2]
	}
	return data
}

// crlf turns bare LF line ends into CRLF, as SMTP requires.
func crlf(data []byte) []byte {
	if !bytes.Contains(data, []byte("\n")) {
		return data
	}
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	return []byte(strings.ReplaceAll(s, "\n", "\r\n"))
}

// oneLine makes foreign text safe for one header field line: control
// characters (CR and LF among them) become spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// is7bit reports whether b holds only US-ASCII.
func is7bit(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
