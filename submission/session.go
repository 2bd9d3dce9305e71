package submission

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-sasl"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue"
)

// session is one SMTP conversation after HELO/EHLO. go-smtp makes a new one
// after STARTTLS, which is what RFC 3207 section 4.2 asks for: everything
// learnt before the handshake is forgotten.
type session struct {
	srv  *Server
	conn *smtp.Conn
	ip   netip.Addr
	log  *slog.Logger
	tls  bool
	cred identity.Credential

	// current transaction
	from     *string
	mailOpts smtp.MailOptions
	rcpts    []queue.Recipient
}

func (s *Server) newSession(c *smtp.Conn) (smtp.Session, error) {
	ip := remoteIP(c.Conn())
	_, isTLS := c.TLSConnectionState()
	ss := &session{
		srv:  s,
		conn: c,
		ip:   ip,
		tls:  isTLS,
		log:  s.log.With("client", ip.String()),
	}
	ss.log.Debug("session", "helo", c.Hostname(), "tls", isTLS)
	return ss, nil
}

func remoteIP(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		if a, ok := netip.AddrFromSlice(ta.IP); ok {
			return a.Unmap()
		}
	}
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// mayRelay is the relay policy (Acceptor.MayRelay).
func (s *session) mayRelay() bool { return s.srv.Acceptor().MayRelay(s.client()) }

func (s *session) reject(reason RejectReason, err *smtp.SMTPError, args ...any) error {
	s.log.Info("rejected", append([]any{"reason", reason, "reply", err.Code}, args...)...)
	if o := s.srv.opts.Observer; o != nil {
		o.Rejected(reason)
	}
	return err
}

func (s *session) Mail(from string, opts *smtp.MailOptions) error {
	if s.srv.opts.Inbound != nil {
		return s.inboundMail(from, opts)
	}
	if s.from != nil && s.mayRelay() {
		// RFC 5321 section 4.1.4: MAIL must not be sent while a
		// transaction is open; go-smtp would let it replace the sender.
		return s.reject(RejectSequence, errNestedMail, "from", from)
	}
	from = s.qualify(from)
	if err := s.srv.Acceptor().CheckSender(s.client(), from); err != nil {
		return err
	}
	if opts != nil && opts.Size > s.srv.opts.MaxMessageBytes {
		return s.reject(RejectSize, ErrTooBig, "declared_size", opts.Size)
	}
	if err := s.srv.Acceptor().CheckHold(s.client(), mailHold(opts)); err != nil {
		return err
	}
	f := from
	s.from = &f
	if opts != nil {
		s.mailOpts = *opts
	}
	s.rcpts = s.rcpts[:0]
	return nil
}

func (s *session) Rcpt(to string, opts *smtp.RcptOptions) error {
	if s.srv.opts.Inbound != nil {
		return s.inboundRcpt(to)
	}
	from := ""
	if s.from != nil {
		from = *s.from
	}
	to = s.qualify(to)
	if err := s.srv.Acceptor().CheckRecipientFrom(s.client(), from, to, len(s.rcpts)); err != nil {
		return err
	}
	r := queue.Recipient{Address: to}
	if opts != nil {
		if opts.OriginalRecipient != "" {
			// RFC 3461 section 4.2: the address type is case-insensitive.
			typ := strings.ToLower(string(opts.OriginalRecipientType))
			if typ == "" {
				typ = "rfc822"
			}
			r.ORCPT = typ + ";" + opts.OriginalRecipient
		}
		for _, n := range opts.Notify {
			r.Notify = append(r.Notify, string(n))
		}
	}
	if len(s.rcpts) == 0 {
		if lc := underlying(s.conn.Conn()); lc != nil {
			lc.setInTransaction(true)
		}
	}
	s.rcpts = append(s.rcpts, r)
	return nil
}

// validAddress accepts user@domain with a non-empty local part and domain and
// no characters that would let an address smuggle routing or header syntax.
// go-smtp has already parsed and unquoted the path; source routes
// (<@a,@b:user@c>) arrive without their route, which RFC 5321 section 4.1.1.3
// says to ignore.
func validAddress(a string) bool {
	at := strings.LastIndexByte(a, '@')
	if at <= 0 || at == len(a)-1 || len(a) > 320 {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if c < 0x20 || c == 0x7f || c == '<' || c == '>' || c == ' ' || c == '\\' {
			return false
		}
	}
	return true
}

func (s *session) Data(r io.Reader) error {
	if s.from == nil || len(s.rcpts) == 0 {
		return &smtp.SMTPError{Code: 503, EnhancedCode: smtp.EnhancedCode{5, 5, 1}, Message: "Bad sequence of commands"}
	}
	srv := s.srv
	// go-smtp's ReadTimeout is set once per command and is not refreshed
	// during DATA, so it would bound the whole upload; give DATA its own budget.
	_ = s.conn.Conn().SetReadDeadline(srv.opts.Clock.Now().Add(srv.opts.DataTimeout))
	if srv.opts.Inbound != nil {
		return s.inboundData(func(w *bytes.Buffer) error { return s.bodyError(copyBody(w, r, srv.opts.MaxMessageBytes)) })
	}

	m, err := srv.Acceptor().Open(s.client(), s.transaction())
	if err != nil {
		return err
	}
	// The body goes into the queue draft (and the signer beside it, see
	// Acceptor.Open) here, after the trace header: straight from go-smtp's
	// buffer for DATA (copyBody).
	if err := copyBody(m, r, srv.opts.MaxMessageBytes); err != nil {
		m.Abort()
		return s.bodyError(err)
	}
	env, err := m.Commit()
	var dup *Duplicate
	if errors.As(err, &dup) {
		// A repeat of a key (idempotency.go): the first message's reply.
		env.ID, err = dup.ID, nil
	}
	if err != nil {
		return err
	}
	_ = s.conn.Conn().SetReadDeadline(time.Time{})
	// RFC 5321 section 4.2: the text is free; "queued as ID" is what Postfix
	// users grep for.
	return &smtp.SMTPError{Code: 250, EnhancedCode: smtp.EnhancedCode{2, 0, 0}, Message: "Ok: queued as " + env.ID}
}

// bodyError is the reply to a body that could not be read whole (nil for
// none).
func (s *session) bodyError(err error) error {
	if err != nil {
		var se *smtp.SMTPError
		switch {
		case errors.Is(err, errBareNewlineFound):
			return s.reject(RejectBareNewline, errBareNewline)
		case errors.Is(err, errTooBigFound), errors.Is(err, smtp.ErrDataTooLarge):
			return s.reject(RejectSize, ErrTooBig)
		case errors.Is(err, smtp.ErrTooLongLine):
			return s.reject(RejectLineLength, errLineTooLong)
		case errors.As(err, &se):
			return se
		case errors.Is(err, errWriteFailed):
			s.log.Error("queue write failed", "err", err)
			return s.reject(RejectStorage, errQueueUnavailable)
		default:
			// The client went away or timed out mid-DATA: it never saw a 250.
			// Hang up: go-smtp would otherwise answer and go on to parse the
			// rest of the unfinished body as commands, which lets a body
			// smuggle in a second transaction (RFC 5321 section 4.5.3.2
			// says to close on a timeout anyway).
			s.log.Info("data aborted", "err", err)
			hangUp(s.conn.Conn(), errIncomplete)
			return errIncomplete
		}
	}
	return nil
}

// hangUp writes e as the last reply and closes the socket, so that nothing
// more is read from the client. It closes the socket, not the smtp.Conn:
// go-smtp holds its lock while calling the session. go-smtp's own reply
// afterwards goes nowhere.
func hangUp(c net.Conn, e *smtp.SMTPError) {
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = fmt.Fprintf(c, "%d %d.%d.%d %s\r\n", e.Code, e.EnhancedCode[0], e.EnhancedCode[1], e.EnhancedCode[2], e.Message)
	c.Close()
}

// Reset ends the transaction. go-smtp calls it right after the reply to
// DATA or BDAT LAST, so during shutdown this is where the session's next
// command read starts to fail and the session ends (see limitedConn).
func (s *session) Reset() {
	if lc := underlying(s.conn.Conn()); lc != nil {
		lc.setInTransaction(false)
	}
	s.from = nil
	s.mailOpts = smtp.MailOptions{}
	s.rcpts = s.rcpts[:0]
}

func (s *session) Logout() error { return nil }

// AuthMechanisms implements smtp.AuthSession. go-smtp offers them only on TLS
// connections unless AllowInsecureAuth (RFC 4954 section 4).
func (s *session) AuthMechanisms() []string {
	if len(s.srv.policy.Load().Users) == 0 || s.srv.opts.Inbound != nil {
		return nil
	}
	return []string{sasl.Plain, sasl.Login}
}

// Auth implements smtp.AuthSession.
func (s *session) Auth(mech string) (sasl.Server, error) {
	if s.cred.Authenticated() {
		return nil, &smtp.SMTPError{Code: 503, EnhancedCode: smtp.EnhancedCode{5, 5, 1}, Message: "Already authenticated"}
	}
	check := func(username, password string) error { return s.checkPassword(username, password) }
	switch strings.ToUpper(mech) {
	case sasl.Plain:
		return sasl.NewPlainServer(func(identity, username, password string) error {
			if identity != "" && identity != username {
				return s.authFail(username, "authorization identity differs")
			}
			return check(username, password)
		}), nil
	case sasl.Login:
		return newLoginServer(check), nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

// copyBody writes the message body from go-smtp's reader r to w: for DATA
// with dotBody, from go-smtp's raw DATA stream (smtp.RawDataReader, the
// patch in internal/gosmtp), for BDAT through the chunk pipe, checked
// by bodyWriter.
func copyBody(w io.Writer, r io.Reader, limit int64) error {
	if raw, ok := r.(smtp.RawDataReader); ok {
		_, err := dotBody(raw, w, limit)
		return err
	}
	return copyChecked(w, r, limit)
}

// copyChecked copies r to w through bodyWriter's checks.
func copyChecked(w io.Writer, r io.Reader, limit int64) error {
	bw := &bodyWriter{w: w, limit: limit}
	buf := copyBuffers.Get().(*[]byte)
	_, err := io.CopyBuffer(bw, r, *buf)
	copyBuffers.Put(buf)
	if err == nil {
		err = bw.finish()
	}
	return err
}

// copyBuffers are reused for BDAT: io.Copy would allocate 32 KiB per
// message, a large share of the garbage at thousands of messages a second.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
