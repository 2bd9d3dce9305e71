package smtpclient

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-sasl"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// wire is the client side of one SMTP connection (RFC 5321 section 4.1):
// it writes commands, reads replies and sends message content. relayq
// speaks this side itself rather than through go-smtp's Client for two
// reasons measured under load: go-smtp dot-stuffs the body a byte at a time
// through a 4 KiB buffer (a fifth of the relay's CPU with 20 KiB messages,
// and five write system calls each), and it cannot pipeline MAIL, RCPT and
// DATA (RFC 2920), which costs two round trips per message.
//
// Server replies come back as *smtp.SMTPError (see serverReply), the form
// smtpcodes.Classify reads; a reply that is not SMTP is a
// textproto.ProtocolError; anything else is the connection's error.
type wire struct {
	conn    net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	timeout time.Duration
	// ext holds the EHLO keywords, upper case, with their parameters;
	// nil before EHLO and after a HELO.
	ext map[string]string
	// err is a command queue refused; flush returns it instead of sending,
	// so a pipelined group is sent whole or not at all.
	err error
}

// wireBuffer holds a typical message and its final dot, so that it goes out
// in one write.
const wireBuffer = 32 << 10

// maxPipelined is the most RCPT commands sent in one pipelined group:
// about 30 KiB of commands and 10 KiB of replies, well inside the socket
// buffers at both ends.
const maxPipelined = 500

// maxReplyLines bounds a multi-line reply, so that a broken or hostile
// server cannot make us buffer without end.
const maxReplyLines = 200

// newWire starts the conversation on conn; every read and write gets
// timeout, as RFC 5321 section 4.5.3.2 suggests for each command.
func newWire(conn net.Conn, timeout time.Duration) *wire {
	return &wire{
		conn:    conn,
		r:       bufio.NewReaderSize(conn, 4096),
		w:       bufio.NewWriterSize(conn, wireBuffer),
		timeout: timeout,
	}
}

// deadline arms the command timeout for the next reads and writes.
func (w *wire) deadline() {
	_ = w.conn.SetDeadline(time.Now().Add(w.timeout))
}

// queue buffers one command line without sending it. A line with a line
// break in it would smuggle a second command (RFC 5321 section 4.1.1: a
// command is one line): it is refused, and so is every later flush, since
// the replies would no longer match the commands.
func (w *wire) queue(line string) {
	if w.err == nil && strings.ContainsAny(line, "\r\n") {
		w.err = textproto.ProtocolError("delivery: command contains a line break")
	}
	w.w.WriteString(line)
	w.w.WriteString("\r\n")
}

// flush sends what is buffered.
func (w *wire) flush() error {
	if w.err != nil {
		return w.err
	}
	w.deadline()
	return w.w.Flush()
}

// reply reads one reply, which may span lines (RFC 5321 section 4.2.1).
// The text is the lines' texts joined by "\n", as net/textproto gives it.
func (w *wire) reply() (int, string, error) {
	w.deadline()
	var text strings.Builder
	code := 0
	for n := 0; ; n++ {
		line, err := w.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return 0, "", textproto.ProtocolError("delivery: reply line too long")
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, "", err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) < 3 || (len(line) > 3 && line[3] != ' ' && line[3] != '-') {
			return 0, "", textproto.ProtocolError("delivery: malformed reply: " + strconv.Quote(string(line)))
		}
		c, err := strconv.Atoi(string(line[:3]))
		if err != nil || c < 200 || c > 599 {
			return 0, "", textproto.ProtocolError("delivery: malformed reply code: " + strconv.Quote(string(line)))
		}
		if n > 0 && c != code {
			return 0, "", textproto.ProtocolError("delivery: reply code changed within a reply: " + strconv.Quote(string(line)))
		}
		code = c
		if n > 0 {
			text.WriteByte('\n')
		}
		if len(line) > 4 {
			text.Write(line[4:])
		}
		if len(line) == 3 || line[3] == ' ' {
			return code, text.String(), nil
		}
		if n >= maxReplyLines {
			return 0, "", textproto.ProtocolError("delivery: reply has too many lines")
		}
	}
}

// expect reads a reply and turns one outside class (2 for 2xx, 3 for 3xx)
// into an error; class 0 takes any reply. A refusal (4xx, 5xx) is the
// server's reply; a positive reply of the wrong class (250 where 354 is
// due, 354 where 250 is) is not an answer to the command at all but a
// reply out of step, so it is a protocol error: the conversation can no
// longer be trusted (RFC 5321 section 4.3.2 lists the replies each command
// may get), and nothing it says may count as delivered.
func (w *wire) expect(class int) (int, string, error) {
	code, text, err := w.reply()
	if err != nil {
		return 0, "", err
	}
	if class != 0 && code/100 != class {
		if code < 400 {
			return code, text, textproto.ProtocolError(fmt.Sprintf(
				"delivery: reply out of step: %dxx due, server sent %q", class, fmt.Sprintf("%d %s", code, text)))
		}
		return code, text, serverReply(code, text)
	}
	return code, text, nil
}

// unsolicited reports whether the server has said something nobody asked
// for, or has closed the connection, while it sat idle: an extra reply
// would be read as the answer to the next command, so such a connection
// is never reused. raw is the TCP connection under any TLS. It does not
// wait: what has not arrived yet is caught by expect's check of the reply
// to DATA.
func (w *wire) unsolicited(raw net.Conn) bool {
	return w.r.Buffered() > 0 || pending(raw)
}

// ahead reports, as a protocol error, a reply the server sent before it
// was asked for anything: once the server has said 354 (alone, or as the
// last reply of a pipelined group), it waits for the content and has
// nothing left to say until the final dot. Bytes already here are a reply
// out of step, such as a 250 sent with the 354, which would otherwise be
// read as the answer to the content, before the server saw a byte of it.
// raw is the TCP connection under any TLS: on a plaintext connection a
// reply that arrived after the 354 is seen there too. It does not wait.
func (w *wire) ahead(raw net.Conn) error {
	n := w.r.Buffered()
	if n == 0 && (raw == nil || raw != w.conn || !pending(raw)) {
		return nil
	}
	early, _ := w.r.Peek(min(n, 80))
	early, _, _ = bytes.Cut(early, []byte("\r\n"))
	return textproto.ProtocolError(fmt.Sprintf(
		"delivery: reply out of step: server sent %q before the content it asked for with 354", early))
}

// cmd sends one command and reads its reply, which must be in class.
func (w *wire) cmd(class int, line string) (int, string, error) {
	w.queue(line)
	if err := w.flush(); err != nil {
		return 0, "", err
	}
	return w.expect(class)
}

// hello sends EHLO, falling back to HELO for a server that does not know
// it (RFC 5321 section 4.1.1.1), and records the extensions offered.
func (w *wire) hello(name string) error {
	w.ext = nil
	_, text, err := w.cmd(2, "EHLO "+name)
	if code := replyCode(err); code == 500 || code == 502 {
		_, _, err = w.cmd(2, "HELO "+name)
		return err
	}
	if err != nil {
		return err
	}
	w.ext = map[string]string{}
	lines := strings.Split(text, "\n")
	for _, line := range lines[1:] {
		k, v, _ := strings.Cut(line, " ")
		w.ext[strings.ToUpper(k)] = v
	}
	return nil
}

// has reports whether the server offered the extension keyword.
func (w *wire) has(keyword string) bool {
	_, ok := w.ext[keyword]
	return ok
}

// maxSize is the SIZE the server announced (RFC 1870); 0 means none.
func (w *wire) maxSize() int64 {
	v, ok := w.ext["SIZE"]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// supportsAuth reports whether the server offered the SASL mechanism.
func (w *wire) supportsAuth(mech string) bool {
	for _, m := range strings.Fields(w.ext["AUTH"]) {
		if strings.EqualFold(m, mech) {
			return true
		}
	}
	return false
}

// auth runs the AUTH exchange of RFC 4954 with a.
func (w *wire) auth(a sasl.Client) error {
	mech, resp, err := a.Start()
	if err != nil {
		return err
	}
	enc := base64.StdEncoding
	var code int
	var text string
	switch initial := enc.EncodeToString(resp); {
	case resp == nil:
		code, text, err = w.cmd(0, "AUTH "+mech)
	case len(resp) == 0:
		code, text, err = w.cmd(0, "AUTH "+mech+" =")
	case len("AUTH ")+len(mech)+1+len(initial) > 510:
		// An initial response too long for a command line (RFC 5321
		// section 4.5.3.1.4) answers the first, empty challenge instead
		// (RFC 4954 section 4).
		code, text, err = w.cmd(0, "AUTH "+mech)
		if err == nil && code == 334 {
			if text != "" {
				w.abortAuth()
				return errors.New("delivery: server sent a challenge instead of asking for the initial response")
			}
			code, text, err = w.cmd(0, initial)
		}
	default:
		code, text, err = w.cmd(0, "AUTH "+mech+" "+initial)
	}
	for err == nil {
		switch code {
		case 235:
			return nil
		case 334:
		default:
			return serverReply(code, text)
		}
		challenge, derr := enc.DecodeString(text)
		if derr != nil {
			w.abortAuth()
			return fmt.Errorf("delivery: AUTH challenge is not base64: %w", derr)
		}
		resp, err = a.Next(challenge)
		if err != nil {
			w.abortAuth()
			return err
		}
		code, text, err = w.cmd(0, enc.EncodeToString(resp))
	}
	return err
}

// abortAuth cancels an AUTH exchange (RFC 4954 section 4).
func (w *wire) abortAuth() { _, _, _ = w.cmd(0, "*") }

// quit says goodbye; its reply does not matter.
func (w *wire) quit() { _, _, _ = w.cmd(0, "QUIT") }

// dataWriter writes message content after a 354: it doubles a dot that
// starts a line (RFC 5321 section 4.5.2) and adds the final dot on close.
// It expects CRLF line ends (crlf.Writer makes them), so an LF marks the
// start of a line. It scans for "\n." a buffer at a time. Each Write
// re-arms the command timeout, so a long message is bounded per write, not
// as a whole.
type dataWriter struct {
	wire *wire
	mid  bool // the last byte written did not end a line
}

func (d *dataWriter) Write(p []byte) (int, error) {
	n, w := len(p), d.wire.w
	d.wire.deadline()
	for len(p) > 0 {
		if !d.mid && p[0] == '.' {
			w.WriteByte('.')
		}
		i := bytes.Index(p, lfDot)
		if i < 0 {
			if _, err := w.Write(p); err != nil {
				return 0, err
			}
			d.mid = p[len(p)-1] != '\n'
			break
		}
		if _, err := w.Write(p[:i+1]); err != nil {
			return 0, err
		}
		p, d.mid = p[i+1:], false
	}
	return n, nil
}

var lfDot = []byte("\n.")

// close ends the content with the final dot, on a line of its own.
func (d *dataWriter) close() error {
	if d.mid {
		d.wire.w.WriteString("\r\n")
	}
	_, err := d.wire.w.WriteString(".\r\n")
	return err
}

// replyCode is the code of a server reply error, or 0.
func replyCode(err error) int {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

// xtext encodes s as RFC 3461 section 4 xtext, for ENVID and ORCPT.
func xtext(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '!' && c <= '~' && c != '+' && c != '=' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "+%02X", c)
	}
	return b.String()
}

// utf8AddrXtext encodes an address as RFC 6533 section 3 utf-8-addr-xtext
// (unitext when the transaction uses SMTPUTF8): characters that xtext
// cannot carry become \x{HEX}, with at least two digits, as HEXPOINT
// requires (\x{09}, never \x{9}).
func utf8AddrXtext(s string, unitext bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= '!' && r <= '~' && r != '+' && r != '=' && r != '\\':
			b.WriteRune(r)
		case unitext && r > 0x7f:
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, `\x{%02X}`, r)
		}
	}
	return b.String()
}

// drain reads and drops n replies to pipelined commands whose outcome no
// longer matters, stopping at a broken connection.
func (w *wire) drain(n int) {
	for ; n > 0; n-- {
		if _, _, err := w.reply(); err != nil {
			return
		}
	}
}
