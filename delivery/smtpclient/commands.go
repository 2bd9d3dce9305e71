package smtpclient

import (
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// mailCommand is the MAIL command for env with the parameters the server
// offers (RFC 1652, RFC 1870, RFC 6531, RFC 3461 section 4.3 and 4.4).
func mailCommand(env Envelope, w *wire, utf8, dsn bool) string {
	var b strings.Builder
	b.WriteString("MAIL FROM:<")
	b.WriteString(env.From)
	b.WriteByte('>')
	if w.has("8BITMIME") {
		b.WriteString(" BODY=8BITMIME")
	}
	if w.has("SIZE") && env.Size > 0 {
		b.WriteString(" SIZE=")
		b.WriteString(strconv.FormatInt(env.Size, 10))
	}
	if utf8 {
		b.WriteString(" SMTPUTF8")
	}
	if dsn {
		if ret := strings.ToUpper(env.RET); ret == "FULL" || ret == "HDRS" {
			b.WriteString(" RET=" + ret)
		}
		if env.EnvID != "" && isPrintableASCII(env.EnvID) {
			b.WriteString(" ENVID=" + xtext(env.EnvID))
		}
	}
	return b.String()
}

// rcptCommand is the RCPT command for rq, with its DSN parameters when the
// server takes them (RFC 3461 section 4.1 and 4.2). A NOTIFY or ORCPT the
// server would refuse as malformed is left out rather than failing the
// recipient. unitext says the transaction uses SMTPUTF8 (MAIL ... SMTPUTF8):
// only then may a utf-8 ORCPT carry raw UTF-8 (RFC 6533 section 3).
func rcptCommand(rq RcptReq, dsn, unitext bool) string {
	line := "RCPT TO:<" + rq.Address + ">"
	if !dsn {
		return line
	}
	seen := map[string]bool{}
	valid := len(rq.Notify) > 0
	var notify []string
	for _, n := range rq.Notify {
		v := strings.ToUpper(strings.TrimSpace(n))
		switch v {
		case "NEVER", "DELAY", "FAILURE", "SUCCESS":
		default:
			valid = false
		}
		if seen[v] {
			valid = false
		}
		seen[v] = true
		notify = append(notify, v)
	}
	// RFC 3461 section 4.1: NEVER stands alone.
	if valid && !(seen["NEVER"] && len(seen) > 1) {
		line += " NOTIFY=" + strings.Join(notify, ",")
	}
	if typ, addr, ok := strings.Cut(rq.ORCPT, ";"); ok && addr != "" && !strings.ContainsAny(addr, "\r\n") {
		switch {
		case strings.EqualFold(typ, "rfc822") && isPrintableASCII(addr):
			line += " ORCPT=rfc822;" + xtext(addr)
		case !utf8.ValidString(addr):
			// 8-bit xtext that is not UTF-8: the utf-8 type cannot carry it
			// and the rfc822 type needs ASCII (RFC 3461 section 4.2,
			// RFC 6533 section 3), so it is left out rather than changed.
		case strings.EqualFold(typ, "rfc822"), strings.EqualFold(typ, "utf-8"):
			line += " ORCPT=utf-8;" + utf8AddrXtext(addr, unitext)
		}
	}
	return line
}

// isServerReply reports whether err is a reply the server sent, as opposed
// to a broken or timed-out connection, after which nothing more can be said.
func isServerReply(err error) bool { return replyCode(err) != 0 }

// serverReply builds an *smtp.SMTPError from a code and reply text, taking a
// leading RFC 3463 enhanced code as go-smtp's client does.
func serverReply(code int, msg string) *smtp.SMTPError {
	e := &smtp.SMTPError{Code: code, Message: msg}
	first, rest, ok := strings.Cut(msg, " ")
	parts := strings.Split(first, ".")
	if !ok || len(parts) != 3 {
		return e
	}
	var ec smtp.EnhancedCode
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return e
		}
		ec[i] = n
	}
	e.EnhancedCode = ec
	e.Message = strings.ReplaceAll(rest, "\n"+first+" ", "\n")
	return e
}

// trackedReader remembers a read error so that a failing disk is told
// apart from a failing network after io.Copy.
type trackedReader struct {
	r   io.Reader
	err error
}

func (t *trackedReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		t.err = err
	}
	return n, err
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// isPrintableASCII is RFC 3461's condition for ENVID and rfc822 ORCPT.
func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// copyBuffers are reused for message bodies: io.Copy would allocate 32 KiB
// per message, a large share of the garbage at thousands of messages a second.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
