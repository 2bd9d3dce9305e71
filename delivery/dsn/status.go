package dsn

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/relayq/relayq/smtpcodes"
)

// dateFormat is the RFC 5322 §3.3 date-time that RFC 3464 date fields use.
const dateFormat = "Mon, 02 Jan 2006 15:04:05 -0700"

// smtpReply recognises a diagnostic that is an SMTP reply, which RFC 3464
// §2.3.6 labels with the "smtp" diagnostic type; anything else is ours.
var smtpReply = regexp.MustCompile(`^[2-5][0-9][0-9]( |$)`)

// addrType is an RFC 3464 address-type atom.
var addrType = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9\-]*$`)

// deliveryStatus renders the message/delivery-status body (RFC 3464 §2.1):
// the per-message fields (§2.2), then one blank-line-separated group per
// recipient (§2.3), fields in the order of the RFC's ABNF. global: the
// body of a message/global-delivery-status (RFC 6533), where addresses and
// diagnostics keep their UTF-8.
func deliveryStatus(r *Report, global bool) []byte {
	var b bytes.Buffer
	if r.EnvID != "" {
		writeField(&b, "Original-Envelope-Id", ascii(r.EnvID))
	}
	writeField(&b, "Reporting-MTA", "dns; "+ascii(r.ReportingMTA))
	if !r.Arrival.IsZero() {
		writeField(&b, "Arrival-Date", r.Arrival.Format(dateFormat))
	}
	for _, rc := range r.Recipients {
		b.WriteString("\r\n")
		if rc.Original != "" {
			writeField(&b, "Original-Recipient", typedAddress(rc.Original, global))
		}
		writeField(&b, "Final-Recipient", address("rfc822", rc.Final, global))
		writeField(&b, "Action", rc.Action)
		writeField(&b, "Status", rc.Status)
		if rc.RemoteMTA != "" {
			writeField(&b, "Remote-MTA", "dns; "+ascii(rc.RemoteMTA))
		}
		if d := diagnostic(rc.Diagnostic, global); d != "" {
			kind := "X-Relayq"
			if smtpReply.MatchString(d) {
				kind = "smtp"
			}
			writeField(&b, "Diagnostic-Code", kind+"; "+d)
		}
		if !rc.LastAttempt.IsZero() {
			writeField(&b, "Last-Attempt-Date", rc.LastAttempt.Format(dateFormat))
		}
		if rc.Action == ActionDelayed && !rc.WillRetryUntil.IsZero() {
			writeField(&b, "Will-Retry-Until", rc.WillRetryUntil.Format(dateFormat))
		}
	}
	return b.Bytes()
}

// typedAddress renders an ORCPT value "type;address" (a missing type means
// rfc822, a malformed one is kept as part of the address).
func typedAddress(orcpt string, global bool) string {
	typ, addr, ok := strings.Cut(orcpt, ";")
	typ = strings.TrimSpace(typ)
	if !ok || !addrType.MatchString(typ) {
		typ, addr = "rfc822", orcpt
	}
	return address(typ, addr, global)
}

// address renders "type; address". An ASCII address is given as is. A
// non-ASCII one under the rfc822 or utf-8 type becomes the utf-8 type
// (RFC 6533 §3): in a message/delivery-status body in the 7-bit
// utf-8-addr-xtext form RFC 6533 requires there, in a
// message/global-delivery-status one (global) as the UTF-8 address
// itself (utf-8-address). Under any other type we cannot know the
// encoding, so non-ASCII becomes '?'.
func address(typ, addr string, global bool) string {
	addr = smtpcodes.OneLine(addr)
	if isASCII(addr) {
		return typ + "; " + addr
	}
	if !strings.EqualFold(typ, "rfc822") && !strings.EqualFold(typ, "utf-8") {
		return typ + "; " + ascii(addr)
	}
	if global && utf8.ValidString(addr) {
		return "utf-8; " + addr
	}
	return "utf-8; " + utf8AddrXtext(addr)
}

// diagnostic renders a Diagnostic-Code text for the 7-bit
// delivery-status part: each non-ASCII character becomes RFC 6533's
// EmbeddedUnicodeChar, \x{HEXPOINT}, so a server's UTF-8 reply ("550 5.1.1
// Empf\x{E4}nger unbekannt") can be read back instead of becoming '?'.
// ASCII text is left exactly as the server sent it, and so is UTF-8 in a
// message/global-delivery-status (global; RFC 6533 lets its "smtp"
// diagnostics carry UTF-8).
func diagnostic(s string, global bool) string {
	s = smtpcodes.OneLine(s)
	if isASCII(s) || (global && utf8.ValidString(s)) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r < utf8.RuneSelf {
			b.WriteRune(r)
			continue
		}
		fmt.Fprintf(&b, `\x{%X}`, r)
	}
	return b.String()
}

// utf8AddrXtext escapes what QCHAR (RFC 6533 §3: printable ASCII except
// space, '+', '=' and '\') does not allow as \x{HHHH}.
func utf8AddrXtext(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > ' ' && r < 0x7f && r != '+' && r != '=' && r != '\\' {
			b.WriteRune(r)
			continue
		}
		fmt.Fprintf(&b, `\x{%X}`, r)
	}
	return b.String()
}

func isASCII[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// formatDate is the RFC 5322 date used in the human-readable text too.
func formatDate(t time.Time) string { return t.Format(dateFormat) }
