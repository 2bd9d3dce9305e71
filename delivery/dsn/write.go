package dsn

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/relayq/relayq/smtpcodes"
)

// Write writes r as an RFC 3464 delivery status notification to w, returning
// the original message read from original (nil for none) as the third part.
// It checks r first and writes nothing when r cannot make a valid DSN; the
// message is built in memory (bounded by MaxReturn) and written with one
// Write call, so w never sees half a report from a failed build.
func Write(w io.Writer, r Report, original io.Reader) error {
	if err := r.check(); err != nil {
		return err
	}
	orig, err := r.readReturned(original)
	if err != nil {
		return err
	}
	human := humanText(&r, orig)
	global := r.global()
	status := deliveryStatus(&r, global)
	parts := [][]byte{human, status}
	if orig != nil {
		parts = append(parts, orig.body)
	}
	boundary := pickBoundary(boundaryBase(r.Boundary), parts...)

	var b bytes.Buffer
	b.Grow(len(human) + len(status) + len(parts[len(parts)-1]) + 2048)
	// RFC 2045 §6.4: a multipart's encoding is the widest of its parts'.
	writeHeader(&b, &r, boundary, !isASCII(human) || !isASCII(status) || (orig != nil && orig.eightBit))
	b.WriteString("\r\nThis is a MIME-encapsulated message.\r\n")
	delim := "\r\n--" + boundary + "\r\n"
	b.WriteString(delim)
	writeHumanPart(&b, human)
	b.WriteString(delim)
	writeStatusPart(&b, status, global)
	if orig != nil {
		b.WriteString(delim)
		writeReturnedPart(&b, orig, r.ReturnFull, r.SMTPUTF8)
	}
	b.WriteString("\r\n--" + boundary + "--\r\n")

	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("dsn: write report: %w", err)
	}
	return nil
}

// readReturned reads the part of original the report returns (all of it
// or its header section, at most MaxReturn bytes); nil when there is none
// to return.
func (r *Report) readReturned(original io.Reader) (*returned, error) {
	max := r.MaxReturn
	if max == 0 {
		max = DefaultMaxReturn
	}
	if original == nil || max <= 0 {
		return nil, nil
	}
	o, err := readOriginal(original, max, !r.ReturnFull)
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// writeHeader writes the report's own header section, without the empty
// line that ends it.
func writeHeader(b *bytes.Buffer, r *Report, boundary string, eightBit bool) {
	from := r.From
	if from == "" {
		from = "Mail Delivery System <MAILER-DAEMON@" + r.ReportingMTA + ">"
	}
	writeField(b, "From", smtpcodes.OneLine(from))
	writeField(b, "To", "<"+smtpcodes.OneLine(r.To)+">")
	writeField(b, "Subject", r.subject())
	writeField(b, "Date", r.Date.Format(dateFormat))
	writeField(b, "Message-ID", "<"+messageID(r.MessageID)+">")
	// RFC 3834 §5: a DSN is an automatic response; autoresponders must not
	// answer it.
	writeField(b, "Auto-Submitted", "auto-replied")
	if r.QueueID != "" {
		writeField(b, "X-Relayq-Queue-ID", smtpcodes.OneLine(r.QueueID))
	}
	writeField(b, "MIME-Version", "1.0")
	writeField(b, "Content-Type", `multipart/report; report-type=delivery-status; boundary="`+boundary+`"`)
	if eightBit {
		writeField(b, "Content-Transfer-Encoding", "8bit")
	}
}

// writeHumanPart writes the first part, the explanation for people.
func writeHumanPart(b *bytes.Buffer, human []byte) {
	writeField(b, "Content-Description", "Notification")
	writeField(b, "Content-Type", "text/plain; charset=utf-8")
	if !isASCII(human) {
		writeField(b, "Content-Transfer-Encoding", "8bit")
	}
	b.WriteString("\r\n")
	b.Write(human)
}

// writeStatusPart writes the second part, the machine-readable fields:
// message/delivery-status, 7-bit, or (global) message/global-delivery-status
// with UTF-8 in it (RFC 6533).
func writeStatusPart(b *bytes.Buffer, status []byte, global bool) {
	writeField(b, "Content-Description", "Delivery report")
	if global {
		writeField(b, "Content-Type", "message/global-delivery-status")
		writeField(b, "Content-Transfer-Encoding", "8bit")
	} else {
		writeField(b, "Content-Type", "message/delivery-status")
	}
	b.WriteString("\r\n")
	b.Write(status)
}

// writeReturnedPart writes the third part: the original message
// (message/rfc822) or only its header section (text/rfc822-headers); for an
// internationalized message (intl: sent with SMTPUTF8) their RFC 6533
// counterparts, message/global and message/global-headers (which takes no
// charset parameter).
func writeReturnedPart(b *bytes.Buffer, orig *returned, full, intl bool) {
	switch {
	case full && intl:
		writeField(b, "Content-Description", "Original message")
		writeField(b, "Content-Type", "message/global")
	case full:
		writeField(b, "Content-Description", "Original message")
		writeField(b, "Content-Type", "message/rfc822")
	case intl:
		writeField(b, "Content-Description", "Original message headers")
		writeField(b, "Content-Type", "message/global-headers")
	default:
		writeField(b, "Content-Description", "Original message headers")
		writeField(b, "Content-Type", "text/rfc822-headers")
	}
	if orig.eightBit {
		writeField(b, "Content-Transfer-Encoding", "8bit")
	}
	b.WriteString("\r\n")
	b.Write(orig.body)
}

// pickBoundary returns base unless a part contains "--"+base (checking
// anywhere, not only at line starts as RFC 2046 §5.1.1 needs, is simpler to
// be sure of); then it appends a hash of the content, which content cannot
// contain except by a hash collision. A counter suffix would let a hostile
// original holding "--b=1", "--b=2", ... make this loop for long.
func pickBoundary(base string, parts ...[]byte) string {
	b := base
	for n := 0; ; n++ {
		clash := false
		for _, p := range parts {
			if bytes.Contains(p, []byte("--"+b)) {
				clash = true
				break
			}
		}
		if !clash {
			return b
		}
		h := sha256.New()
		fmt.Fprintf(h, "%d\x00", n)
		for _, p := range parts {
			h.Write(p)
		}
		suffix := "=_" + hex.EncodeToString(h.Sum(nil))[:24]
		b = base[:min(len(base), 70-len(suffix))] + suffix
	}
}

// messageID strips what cannot be inside <...> of a msg-id (RFC 5322 §3.6.4).
func messageID(id string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == '<' || r == '>' || r >= 0x7f {
			return -1
		}
		return r
	}, id)
}
