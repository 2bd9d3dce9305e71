package submission

import (
	"bytes"
	"io"
	"strings"
	"time"
)

// maxHeaderScan bounds how much of a message's header section is held to
// find Message-ID, Subject and Date; a longer section is passed on as it is.
const maxHeaderScan = 64 << 10

// headerScan sits in front of the queue draft: it holds the header section
// until its end, notes Message-ID, Subject and Date, and, when add is set,
// adds a missing Message-ID or Date before passing it on. The body after
// it streams through untouched.
type headerScan struct {
	w    io.Writer
	buf  []byte
	done bool
	// add, if set, supplies the Message-ID to add when there is none
	// (Date is added as the acceptance time).
	add func() (messageID string, date time.Time)

	messageID, subject string
}

func (h *headerScan) Write(p []byte) (int, error) {
	if h.done {
		return h.w.Write(p)
	}
	h.buf = append(h.buf, p...)
	end := endOfHeaders(h.buf)
	if end < 0 && len(h.buf) <= maxHeaderScan {
		return len(p), nil
	}
	if end < 0 {
		end = len(h.buf) // too long to be headers we should touch
		h.parse(h.buf)
		h.done = true
		if _, err := h.w.Write(h.buf); err != nil {
			return 0, err
		}
		h.buf = nil
		return len(p), nil
	}
	if err := h.flush(end); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush passes on the header section buf[:end] (with any added fields)
// and the rest of buf.
func (h *headerScan) flush(end int) error {
	h.done = true
	hasDate := h.parse(h.buf[:end])
	var extra []byte
	if h.add != nil {
		id, date := h.add()
		if h.messageID == "" {
			h.messageID = id
			extra = append(extra, "Message-ID: "+id+"\r\n"...)
		}
		if !hasDate {
			extra = append(extra, "Date: "+date.Format(time.RFC1123Z)+"\r\n"...)
		}
	}
	out := h.buf
	if len(extra) > 0 {
		out = make([]byte, 0, len(h.buf)+len(extra))
		out = append(out, h.buf[:end]...)
		out = append(out, extra...)
		out = append(out, h.buf[end:]...)
	}
	h.buf = nil
	_, err := h.w.Write(out)
	return err
}

// finish passes on what is still held: a message that is all header
// section (no empty line) ends here.
func (h *headerScan) finish() error {
	if h.done {
		return nil
	}
	end := len(h.buf)
	if !bytes.HasSuffix(h.buf, []byte("\r\n")) && end > 0 {
		// An unterminated last line: add nothing after it.
		h.parse(h.buf)
		h.done = true
		_, err := h.w.Write(h.buf)
		return err
	}
	return h.flush(end)
}

// endOfHeaders is the offset just past the header section's last CRLF
// (where the empty line starts), or -1 if the section has not ended yet.
func endOfHeaders(b []byte) int {
	if bytes.HasPrefix(b, []byte("\r\n")) {
		return 0
	}
	if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
		return i + 2
	}
	return -1
}

// parse notes Message-ID and Subject (unfolded) and says whether there is
// a Date field.
func (h *headerScan) parse(sec []byte) (hasDate bool) {
	var name string
	var val strings.Builder
	done := func() {
		switch strings.ToLower(name) {
		case "message-id":
			if h.messageID == "" {
				h.messageID = trimField(val.String())
			}
		case "subject":
			if h.subject == "" {
				h.subject = trimField(val.String())
			}
		case "date":
			hasDate = true
		}
		name = ""
		val.Reset()
	}
	for _, line := range strings.Split(string(sec), "\r\n") {
		if line != "" && (line[0] == ' ' || line[0] == '\t') {
			if name != "" && val.Len() < 998 {
				val.WriteString(line)
			}
			continue
		}
		done()
		if n, v, ok := strings.Cut(line, ":"); ok && !strings.ContainsAny(n, " \t") {
			name = n
			val.WriteString(v)
		}
	}
	done()
	return hasDate
}

func trimField(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 998 {
		s = s[:998]
	}
	return s
}
