package sendmail

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/rawmsg"
)

// serveSMTP is -bs: SMTP (RFC 5321, server side) on standard input and
// output, as Symfony Mailer's and Laravel's default transport
// (`sendmail -bs -i`) speaks it. Each transaction is relayed over SMTP to
// the relay as it goes, so every refusal the program sees is the relay's
// own reply, and a 250 after the final dot is the relay's after its fsync.
// A relay that cannot be reached gets a 421 greeting (RFC 5321 section
// 3.1) and exit 75. Exit 0 otherwise: the outcome of each message was
// reported in the conversation.
func serveSMTP(env Env, rc RelayConfig, cr credentials) int {
	rs := &relaySession{server: rc.Server, hostname: rc.Hostname, cr: cr}
	if code, err := rs.connect(); err != nil {
		fmt.Fprintf(env.Stdout, "421 4.3.0 %s\r\n", oneLine(err.Error()))
		return fail(env, code, err)
	}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return rs, nil }))
	srv.Domain = rc.Hostname
	// "RCPT TO:<root>" reaches Rcpt, which qualifies it, instead of 501.
	srv.AllowMailboxWithoutDomain = true
	// A long body line goes on to the relay, which encodes it.
	srv.NoDataLineLimit = true
	srv.ErrorLog = log.New(env.Stderr, "sendmail: ", 0)
	if ok, size := rs.c.Extension("SIZE"); ok {
		srv.MaxMessageBytes, _ = strconv.ParseInt(size, 10, 64)
	}
	srv.EnableSMTPUTF8, _ = rs.c.Extension("SMTPUTF8")
	srv.EnableDSN, _ = rs.c.Extension("DSN")
	conn := &stdioConn{r: env.Stdin, w: env.Stdout, done: make(chan struct{})}
	err := srv.Serve(&oneConn{conn: conn})
	rs.Logout()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fail(env, ExSoftware, err)
	}
	return ExOK
}

// relaySession is the program's SMTP session, forwarded command by
// command to one client connection of the relay.
type relaySession struct {
	server, hostname string
	cr               credentials
	c                *smtp.Client
	open             bool // a transaction is open at the relay
}

func (s *relaySession) connect() (int, error) {
	c, code, err := dialRelay(s.server, s.hostname, s.cr)
	if err == nil {
		s.c = c
	}
	return code, err
}

// Mail opens the transaction at the relay. A connection the relay closed
// while the program was idle (its own timeout) is dialled again once.
func (s *relaySession) Mail(from string, opts *smtp.MailOptions) error {
	for try := 0; ; try++ {
		if s.c == nil {
			if _, err := s.connect(); err != nil {
				return relayLost(err)
			}
		}
		err := s.c.Mail(qualify(from, s.hostname), opts)
		var se *smtp.SMTPError
		if err == nil || errors.As(err, &se) || try > 0 {
			s.open = err == nil
			return s.reply(err)
		}
		s.drop()
	}
}

func (s *relaySession) Rcpt(to string, opts *smtp.RcptOptions) error {
	if s.c == nil {
		return relayLost(errors.New("no connection"))
	}
	return s.reply(s.c.Rcpt(qualify(to, s.hostname), opts))
}

// Data streams the message to the relay, its header's bare local parts
// completed (qualifyHeader), its Bcc field removed (the recipients are in
// the envelope; the field would show them to everyone) and every other
// byte as the program sent it, and answers with the relay's reply to the
// final dot.
func (s *relaySession) Data(r io.Reader) error {
	if s.c == nil {
		return relayLost(errors.New("no connection"))
	}
	br := bufio.NewReaderSize(r, 32<<10)
	h, err := rawmsg.ReadHeader(br, maxHeader)
	if errors.Is(err, rawmsg.ErrHeaderTooBig) {
		return &smtp.SMTPError{Code: 552, EnhancedCode: smtp.EnhancedCode{5, 3, 4}, Message: "header block over 1 MiB"}
	}
	if err != nil {
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "reading the message: " + oneLine(err.Error())}
	}
	qualifyHeader(h, s.hostname)
	h.Remove("Bcc")
	s.open = false
	w, err := s.c.Data()
	if err != nil {
		return s.reply(err)
	}
	if _, err := h.WriteTo(w); err != nil {
		s.drop()
		return relayLost(err)
	}
	if _, err := io.Copy(w, br); err != nil {
		s.drop()
		return relayLost(err)
	}
	resp, err := w.CloseWithResponse()
	if err != nil {
		return s.reply(err)
	}
	return okReply(resp.StatusText)
}

// Reset abandons the relay's transaction (RSET) when one is open; go-smtp
// calls it after every message too, when there is none.
func (s *relaySession) Reset() {
	if s.open && s.c != nil {
		if err := s.c.Reset(); err != nil {
			s.drop()
		}
	}
	s.open = false
}

func (s *relaySession) Logout() error {
	if s.c != nil {
		_ = s.c.Quit()
		s.drop()
	}
	return nil
}

func (s *relaySession) drop() {
	if s.c != nil {
		s.c.Close()
		s.c = nil
	}
	s.open = false
}

// reply passes the relay's refusal on as it is; anything that is not a
// reply means the connection is gone, which is temporary (4.4.2).
func (s *relaySession) reply(err error) error {
	var se *smtp.SMTPError
	if err == nil || errors.As(err, &se) {
		return err
	}
	s.drop()
	return relayLost(err)
}

func relayLost(err error) error {
	return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 4, 2}, Message: "relay connection lost: " + oneLine(err.Error())}
}

// okReply is the relay's 250 to the final dot ("2.0.0 Ok: queued as ID"),
// its enhanced code separated as go-smtp writes it.
func okReply(text string) error {
	ec, msg := smtp.EnhancedCode{2, 0, 0}, text
	if code, rest, ok := strings.Cut(text, " "); ok {
		var c smtp.EnhancedCode
		if n, _ := fmt.Sscanf(code, "%d.%d.%d", &c[0], &c[1], &c[2]); n == 3 && c[0] == 2 {
			ec, msg = c, rest
		}
	}
	return &smtp.SMTPError{Code: 250, EnhancedCode: ec, Message: msg}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// stdioConn is standard input and output as the one connection of the
// SMTP server. Deadlines do not apply: the program on the other end
// decides how long the session lasts.
type stdioConn struct {
	r    io.Reader
	w    io.Writer
	once sync.Once
	done chan struct{}
}

func (c *stdioConn) Read(p []byte) (int, error) {
	select {
	case <-c.done:
		return 0, net.ErrClosed
	default:
	}
	return c.r.Read(p)
}

func (c *stdioConn) Write(p []byte) (int, error) { return c.w.Write(p) }

func (c *stdioConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}

func (c *stdioConn) LocalAddr() net.Addr              { return stdioAddr{} }
func (c *stdioConn) RemoteAddr() net.Addr             { return stdioAddr{} }
func (c *stdioConn) SetDeadline(time.Time) error      { return nil }
func (c *stdioConn) SetReadDeadline(time.Time) error  { return nil }
func (c *stdioConn) SetWriteDeadline(time.Time) error { return nil }

type stdioAddr struct{}

func (stdioAddr) Network() string { return "stdio" }
func (stdioAddr) String() string  { return "stdio" }

// oneConn hands the server its one connection, then ends Serve once the
// connection is closed (QUIT or end of input).
type oneConn struct {
	conn  *stdioConn
	taken bool
}

func (l *oneConn) Accept() (net.Conn, error) {
	if !l.taken {
		l.taken = true
		return l.conn, nil
	}
	<-l.conn.done
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return stdioAddr{} }
