package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/smtptest"
)

// outcome is what a submitting client knows about one message.
type outcome int

const (
	// accepted: the DATA reply was 250.
	accepted outcome = iota
	// refused: the server answered with a non-2xx reply; it kept nothing.
	refused
	// lostBeforeDot: the connection failed before the final "." was sent,
	// so the server cannot have seen the end of the message.
	lostBeforeDot
	// inDoubt: the final "." was sent but no reply came back. The server
	// may or may not have queued the message (RFC 1047).
	inDoubt
)

func (o outcome) String() string {
	return [...]string{"accepted", "refused", "lost before dot", "in doubt"}[o]
}

// client is a minimal SMTP client that, unlike go-smtp's, tells apart a
// failure before the final dot from one after it.
type client struct {
	c net.Conn
	r *bufio.Reader
}

const ioTimeout = 10 * time.Second

// dialClient connects, reads the greeting and says EHLO.
func dialClient(addr string) (*client, error) {
	return dialClientFrom(addr, nil)
}

// dialClientFrom is dialClient from the local address from (nil: any).
func dialClientFrom(addr string, from net.IP) (*client, error) {
	d := net.Dialer{Timeout: ioTimeout}
	if from != nil {
		d.LocalAddr = &net.TCPAddr{IP: from}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	cl := &client{c: c, r: bufio.NewReader(c)}
	if code, line, err := cl.reply(); err != nil || code != 220 {
		c.Close()
		return nil, fmt.Errorf("greeting: %d %q %v", code, line, err)
	}
	if code, line, err := cl.cmd("EHLO client.test"); err != nil || code != 250 {
		c.Close()
		return nil, fmt.Errorf("EHLO: %d %q %v", code, line, err)
	}
	return cl, nil
}

func (c *client) close() { c.c.Close() }

// reply reads one reply, possibly multi-line, and returns its code and last line.
func (c *client) reply() (int, string, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(ioTimeout))
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			return 0, line, err
		}
		line = strings.TrimRight(line, "\r\n")
		if len(line) < 3 {
			return 0, line, fmt.Errorf("short reply %q", line)
		}
		code, err := strconv.Atoi(line[:3])
		if err != nil {
			return 0, line, fmt.Errorf("bad reply %q", line)
		}
		if len(line) == 3 || line[3] != '-' {
			return code, line, nil
		}
	}
}

func (c *client) write(s string) error {
	_ = c.c.SetWriteDeadline(time.Now().Add(ioTimeout))
	_, err := io.WriteString(c.c, s)
	return err
}

func (c *client) cmd(line string) (int, string, error) {
	if err := c.write(line + "\r\n"); err != nil {
		return 0, "", err
	}
	return c.reply()
}

// send runs one transaction. body must use CRLF line ends and end in CRLF;
// it is dot-stuffed here. beforeDot, if set, runs just before the final
// write that carries the end of data.
func (c *client) send(from, to, body string, beforeDot func()) (outcome, string, error) {
	for _, s := range []step{{"MAIL FROM:<" + from + ">", 250}, {"RCPT TO:<" + to + ">", 250}, {"DATA", 354}} {
		code, line, err := c.cmd(s.line)
		if err != nil {
			return lostBeforeDot, line, err
		}
		if code != s.want {
			return refused, line, nil
		}
	}
	stuffed := strings.ReplaceAll("\r\n"+body, "\r\n.", "\r\n..")[2:]
	if beforeDot != nil {
		if err := c.write(stuffed); err != nil {
			return lostBeforeDot, "", err
		}
		beforeDot()
		stuffed = ""
	}
	return c.endData(stuffed)
}

// endData writes the rest of a dot-stuffed body and the end of data, and
// says what became of the message.
func (c *client) endData(stuffed string) (outcome, string, error) {
	// Write reports an error whenever the last byte was not written, and
	// the end of data is the last byte: no error means the dot went out.
	if err := c.write(stuffed + ".\r\n"); err != nil {
		return lostBeforeDot, "", err
	}
	code, line, err := c.reply()
	switch {
	case err != nil:
		return inDoubt, line, err
	case code == 250:
		return accepted, line, nil
	default:
		return refused, line, nil
	}
}

// step is one command line and the reply code it must get.
type step struct {
	line string
	want int
}

// steps sends each line in turn and fails the test, prefixing what, at
// the first reply that is not the one wanted.
func (c *client) steps(t *testing.T, what string, steps ...step) {
	t.Helper()
	for _, s := range steps {
		if code, line, err := c.cmd(s.line); err != nil || code != s.want {
			t.Fatalf("%s%q: %d %s %v", what, s.line, code, line, err)
		}
	}
}

// mustDial connects to the SMTP server at addr and says EHLO (dialClient),
// failing the test if it cannot; the connection closes when the test ends.
func mustDial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := dialClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	return c
}

// sendAccepted submits one message over a new connection to addr and
// fails the test, saying what was sent, unless the message is accepted.
func sendAccepted(t *testing.T, addr, from, to, body, what string) {
	t.Helper()
	c, err := dialClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if o, line, err := c.send(from, to, body, nil); o != accepted {
		t.Fatalf("%s: %v %q %v", what, o, line, err)
	}
}

// tokenRE finds the token the tests put in every Subject.
var tokenRE = regexp.MustCompile(`(?m)^Subject: (tok-[0-9a-z-]+)\r$`)

// tokenOf returns the token in a delivered message, or "".
func tokenOf(data []byte) string {
	m := tokenRE.FindSubmatch(data)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// testMessage is a small message carrying tok in its Subject and
// Message-ID, with lines that exercise dot-stuffing on the way in and out.
// It has a Date, so submission.add_missing_headers leaves it as it is.
func testMessage(tok string) string {
	return "From: app@example.org\r\n" +
		"To: rcpt@example.net\r\n" +
		"Date: Mon, 30 Nov 2026 12:00:00 +0000\r\n" +
		"Subject: " + tok + "\r\n" +
		"Message-ID: <" + tok + "@e2e.test>\r\n" +
		"\r\n" +
		"Body of " + tok + ".\r\n" +
		".\r\n" +
		"..two dots\r\n" +
		".leading dot\r\n" +
		"end\r\n"
}

// bareNewline reports whether b contains a CR not followed by LF or an LF
// not preceded by CR.
func bareNewline(b []byte) bool {
	for i, c := range b {
		if c == '\r' && (i+1 == len(b) || b[i+1] != '\n') {
			return true
		}
		if c == '\n' && (i == 0 || b[i-1] != '\r') {
			return true
		}
	}
	return false
}

// waitMessage waits up to timeout for a message at mx that match accepts
// and returns its bytes.
func waitMessage(t *testing.T, mx *smtptest.Server, timeout time.Duration, match func(smtptest.Message) bool) []byte {
	t.Helper()
	var data []byte
	mx.WaitFor(t, timeout, func() bool {
		for _, m := range mx.Messages() {
			if match(m) {
				data = m.Data
				return true
			}
		}
		return false
	})
	return data
}
