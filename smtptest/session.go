package smtptest

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"math"
	"net"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// errAuthRequired is RFC 4954 section 6's reply to MAIL before AUTH;
// go-smtp's ErrAuthRequired is a 502, which clients would read as "command
// not implemented".
var errAuthRequired = &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}

// Errors returned to go-smtp after the connection is already closed; their
// replies go nowhere.
var (
	errDropped      = errors.New("smtptest: connection dropped by rule")
	errServerClosed = errors.New("smtptest: server closed")
)

type backend struct{ s *Server }

// NewSession runs at HELO/EHLO (and again after STARTTLS), so it is where
// ehlo rules apply.
func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	s := b.s
	_, isTLS := c.TLSConnectionState()
	ss := &session{
		srv:    s,
		nc:     c.Conn(),
		client: c.Conn().RemoteAddr().String(),
		helo:   c.Hostname(),
		tls:    isTLS,
	}
	ss.ip = hostOf(ss.client)
	if _, done, err := ss.scripted(StageEHLO, ss.helo, ss.helo); done {
		return nil, err
	}
	s.event(ss.client, StageEHLO, ss.helo, "250 Hello "+ss.helo)
	return ss, nil
}

// session is one SMTP session; go-smtp calls its methods from one goroutine
// at a time (BDAT runs Data on another goroutine, but not concurrently with
// the other methods).
type session struct {
	srv    *Server
	nc     net.Conn // the connection as of this session (TLS after STARTTLS)
	client string
	ip     string
	helo   string
	tls    bool

	authUser string
	from     string
	to       []string
}

var _ smtp.AuthSession = (*session)(nil)

// scripted applies the first matching rule at stage. It reports done when
// the rule decided the reply (returned as err) or dropped the connection;
// otherwise the command proceeds, and the rule is returned for a 2xx text.
func (ss *session) scripted(stage Stage, arg string, matchArgs ...string) (Rule, bool, error) {
	r, ok := ss.srv.rules.decide(stage, matchArgs...)
	if !ok {
		return r, false, nil
	}
	if r.Delay > 0 && !ss.srv.pause(r.Delay) {
		ss.nc.Close()
		return r, true, errServerClosed
	}
	if r.Drop {
		ss.srv.event(ss.client, stage, arg, replyDropped)
		ss.nc.Close()
		return r, true, errDropped
	}
	if r.Code == 0 || r.Code/100 == 2 {
		return r, false, nil
	}
	e := r.smtpError()
	ss.srv.event(ss.client, stage, arg, replyLine(e))
	if e.Code == 421 {
		// RFC 5321 section 3.8: 421 means the server is closing the
		// channel. go-smtp would keep reading, so reply and close here.
		writeReplyAndClose(ss.nc, e)
	}
	return r, true, e
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if len(ss.srv.users) > 0 && ss.authUser == "" {
		ss.srv.event(ss.client, StageMail, from, replyLine(errAuthRequired))
		return errAuthRequired
	}
	if _, done, err := ss.scripted(StageMail, from, from); done {
		return err
	}
	ss.from = from
	ss.srv.event(ss.client, StageMail, from, fmt.Sprintf("250 2.0.0 Roger, accepting mail from <%s>", from))
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if _, done, err := ss.scripted(StageRcpt, to, to); done {
		return err
	}
	if g := ss.srv.grey; g != nil {
		if wait := g.check(ss.srv.now(), ss.ip, ss.from, to); wait > 0 {
			text := ss.srv.cfg.GreylistText
			if text == "" {
				text = fmt.Sprintf("Greylisted, try again in %d seconds", int(math.Ceil(wait.Seconds())))
			}
			e := &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: text}
			ss.srv.event(ss.client, StageRcpt, to, replyLine(e))
			return e
		}
	}
	ss.to = append(ss.to, to)
	ss.srv.event(ss.client, StageRcpt, to, fmt.Sprintf("250 2.0.0 I'll make sure <%s> gets this", to))
	return nil
}

func (ss *session) Data(r io.Reader) error {
	var body []byte
	var n int64
	var err error
	if ss.srv.cfg.DiscardBodies {
		n, err = io.Copy(io.Discard, r)
	} else {
		body, err = io.ReadAll(r)
		n = int64(len(body))
	}
	arg := fmt.Sprintf("%d bytes", n)
	if err != nil {
		var se *smtp.SMTPError
		if errors.As(err, &se) {
			ss.srv.event(ss.client, StageData, arg, replyLine(se))
			return se
		}
		ss.srv.event(ss.client, StageData, arg, "(read error: "+err.Error()+")")
		return err
	}
	rule, done, serr := ss.scripted(StageData, arg, append([]string{ss.from}, ss.to...)...)
	if done {
		return serr
	}
	ss.srv.message(Message{
		Time:     ss.srv.now(),
		Client:   ss.client,
		Helo:     ss.helo,
		From:     ss.from,
		To:       append([]string(nil), ss.to...),
		Data:     body,
		Size:     n,
		TLS:      ss.tls,
		AuthUser: ss.authUser,
	})
	if rule.Code/100 == 2 {
		e := rule.smtpError()
		ss.srv.event(ss.client, StageData, arg, replyLine(e))
		return e // go-smtp writes a 2xx SMTPError as the success line
	}
	ss.srv.event(ss.client, StageData, arg, "250 2.0.0 OK: queued")
	return nil
}

func (ss *session) Reset() {
	ss.from = ""
	ss.to = nil
}

func (ss *session) Logout() error { return nil }

func (ss *session) AuthMechanisms() []string {
	if len(ss.srv.users) == 0 {
		return nil
	}
	return []string{sasl.Plain, sasl.Login}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(identity, user, pass string) error {
			if identity != "" && identity != user {
				// RFC 4616 section 2: acting as another identity needs
				// authorisation this server does not grant.
				return ss.authResult(mech, user, false)
			}
			return ss.authResult(mech, user, ss.checkPassword(user, pass))
		}), nil
	case sasl.Login:
		return &loginServer{check: func(user, pass string) error {
			return ss.authResult(sasl.Login, user, ss.checkPassword(user, pass))
		}}, nil
	}
	ss.srv.event(ss.client, StageAuth, mech, replyLine(smtp.ErrAuthUnknownMechanism))
	return nil, smtp.ErrAuthUnknownMechanism
}

func (ss *session) checkPassword(user, pass string) bool {
	want, ok := ss.srv.users[user]
	return ok && subtle.ConstantTimeCompare([]byte(want), []byte(pass)) == 1
}

// authResult records the outcome; ErrAuthFailed is what go-smtp turns into
// 535 5.7.8 (a plain error would become a temporary 454).
func (ss *session) authResult(mech, user string, ok bool) error {
	arg := mech + " " + user
	if !ok {
		ss.srv.event(ss.client, StageAuth, arg, replyLine(smtp.ErrAuthFailed))
		return smtp.ErrAuthFailed
	}
	ss.authUser = user
	ss.srv.event(ss.client, StageAuth, arg, "235 2.0.0 Authentication succeeded")
	return nil
}
