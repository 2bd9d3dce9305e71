package main

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// tagHeader names the header that ties a delivered message to its submission.
const tagHeader = "X-Relaybench"

// tag is what the X-Relaybench header carries.
type tag struct {
	Run  string
	Seq  int
	Sent time.Time
}

// formatTag renders the header line, CRLF included (RFC 5322 section 2.2).
func formatTag(t tag) string {
	return fmt.Sprintf("%s: run=%s seq=%d sent=%s\r\n", tagHeader, t.Run, t.Seq, t.Sent.UTC().Format(time.RFC3339Nano))
}

// errNoTag means a header block held no X-Relaybench line.
var errNoTag = errors.New("relaybench: no " + tagHeader + " header")

// parseTagLine parses one header line (with or without its line end). It
// returns errNoTag when the line is some other header.
func parseTagLine(line []byte) (tag, error) {
	line = bytes.TrimRight(line, "\r\n")
	name, value, ok := bytes.Cut(line, []byte(":"))
	if !ok || !strings.EqualFold(string(name), tagHeader) {
		return tag{}, errNoTag
	}
	var t tag
	seenSeq := false
	for _, f := range strings.Fields(string(value)) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "run":
			t.Run = v
		case "seq":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return tag{}, fmt.Errorf("relaybench: bad seq %q in %s", v, tagHeader)
			}
			t.Seq, seenSeq = n, true
		case "sent":
			ts, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return tag{}, fmt.Errorf("relaybench: bad sent %q in %s: %w", v, tagHeader, err)
			}
			t.Sent = ts
		}
	}
	if t.Run == "" || !seenSeq {
		return tag{}, fmt.Errorf("relaybench: %s lacks run or seq", tagHeader)
	}
	return t, nil
}

// fillerLine is one body line; 78 bytes with CRLF, well under the 998 octet
// limit of RFC 5322 section 2.1.1 and go-smtp's 2,000 byte line limit.
const fillerLine = "relaybench filler 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRS.\r\n"

// messageHead renders the header block of message seq, blank line included.
// The tag comes first so the sink finds it after the relay's Received lines.
func messageHead(t tag, from, to string) []byte {
	var b bytes.Buffer
	b.WriteString(formatTag(t))
	fmt.Fprintf(&b, "From: <%s>\r\nTo: <%s>\r\n", from, to)
	fmt.Fprintf(&b, "Subject: relaybench %d\r\n", t.Seq)
	fmt.Fprintf(&b, "Date: %s\r\n", t.Sent.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%d.%s@relaybench.localhost>\r\n\r\n", t.Seq, t.Run)
	return b.Bytes()
}

// headAllowance is what messageHead takes at most, so that bodyFor can make
// head plus body come out at about the requested size.
const headAllowance = 300

// bodyFor returns a body of filler lines so that a message of total size
// bytes (headers included) results; at least one line.
func bodyFor(size int) []byte {
	n := (size - headAllowance) / len(fillerLine)
	if n < 1 {
		n = 1
	}
	return bytes.Repeat([]byte(fillerLine), n)
}
