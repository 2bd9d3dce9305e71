package submission

import (
	"bytes"
	"errors"
	"io"
	"strings"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/mime7bit"
	"github.com/relayq/relayq/queue"
)

// Long lines. RFC 5322 section 2.1.1: a line is at most 998 octets
// without its CRLF. Longer ones, which applications send in HTML
// templates and JSON attachments, are refused by some servers ("Line too
// long") and folded by others, which breaks the DKIM signature. So a
// message with such a line is re-encoded before it is signed and
// committed, on every submission path: the parts that have one become
// quoted-printable (text) or base64, the MIME structure kept
// (mime7bit.ScanLongLines). What encoding cannot reach (a header field, a
// signed part, a part already declared encoded) is refused with
// errLongLine, never stored.

// errLongLine refuses a message whose line over 998 octets cannot be
// re-encoded; the text says where it is.
func errLongLine(err error) *smtp.SMTPError {
	why := strings.TrimPrefix(err.Error(), mime7bit.ErrUnconvertible.Error()+": ")
	return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0},
		Message: "Line over 998 octets that cannot be encoded (RFC 5322 section 2.1.1): " + smtpcodesSafe(why)}
}

// smtpcodesSafe keeps a reply text on one line of printable ASCII.
func smtpcodesSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c >= 0x7f {
			b[i] = '?'
		}
	}
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

// lineWatch passes the message on (after the trace header) and notes
// whether a line over MaxLineOctets went by.
type lineWatch struct {
	w    io.Writer
	col  int  // octets of the current line so far, CR included
	long bool // a line over the limit went by
}

func (l *lineWatch) Write(p []byte) (int, error) {
	for q := p; len(q) > 0 && !l.long; {
		i := bytes.IndexByte(q, '\n')
		if i < 0 {
			l.col += len(q)
			// CRLF is not counted: one octet of slack for a CR to come.
			l.long = l.col > mime7bit.MaxLineOctets+1
			break
		}
		n := l.col + i
		if n > 0 && (i == 0 || q[i-1] == '\r') {
			n-- // the CR before LF (bare ones were refused already)
		}
		l.long = n > mime7bit.MaxLineOctets
		l.col, q = 0, q[i+1:]
	}
	return l.w.Write(p)
}

// finish checks the last line, which may have had no CRLF.
func (l *lineWatch) finish() {
	if l.col > mime7bit.MaxLineOctets {
		l.long = true
	}
}

// encodeLongLines re-encodes the draft whose lines lineWatch found too
// long into a new draft, with its own trace header and its own signer,
// and drops the old one. It reads the draft twice (plan, then write), so
// only such messages pay for it. On error the message is aborted.
func (m *Incoming) encodeLongLines() error {
	srv, c := m.a.s, m.c
	fail := func(err error) error {
		m.Abort()
		if errors.Is(err, mime7bit.ErrUnconvertible) {
			return m.a.reject(c, RejectLineLength, errLongLine(err))
		}
		srv.log.Error("queue draft read failed", "id", m.d.ID(), "err", err)
		return m.a.reject(c, RejectStorage, errQueueUnavailable)
	}
	plan, err := withBody(m.d, m.traced, mime7bit.ScanLongLines)
	if err != nil {
		return fail(err)
	}
	old := m.d
	m.closeSigner()
	m.d = srv.opts.Queue.NewDraft()
	defer old.Abort()
	out := m.startDraft()
	if _, err := out.Write(m.trace()); err != nil {
		return fail(err)
	}
	_, err = withBody(old, m.traced, func(r io.Reader) (struct{}, error) {
		return struct{}{}, plan.Convert(out, r)
	})
	if err != nil {
		return fail(err)
	}
	return nil
}

// withBody calls f with what d holds after its first skip octets.
func withBody[T any](d *queue.Draft, skip int64, f func(io.Reader) (T, error)) (T, error) {
	var zero T
	r, err := d.Contents()
	if err != nil {
		return zero, err
	}
	defer r.Close()
	if _, err := io.CopyN(io.Discard, r, skip); err != nil {
		return zero, err
	}
	return f(r)
}
