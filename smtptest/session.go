package smtptest

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"math"
	"net"

	"github.com/emersion/go-sasl"

	smtp "github.com/relayq/relayq/internal/gosmtp"
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
	if _, done, err := ss.decide(StageEHLO, ss.helo, ss.helo); done {
		return nil, err
	}
	ss.event(StageEHLO, ss.helo, "250 "+ss.srv.hostname+" Hello "+ss.helo, ByDefault)
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
	mail     smtp.MailOptions
	to       []string
	thens    []Then // what follows the 250 for each of to
	data     []byte // the message, while data is decided
	ptr      *bool  // whether ip has reverse DNS, once a persona asked
}

var _ smtp.AuthSession = (*session)(nil)

// event records one reply of this session, with the transaction so far.
func (ss *session) event(stage Stage, arg, reply string, by Answerer) {
	e := Event{Client: ss.client, Stage: stage, Arg: arg, Reply: reply, By: by, From: ss.from}
	switch stage {
	case StageMail:
		e.From = arg
	case StageRcpt:
		e.To = []string{arg}
	case StageData:
		e.To = append([]string(nil), ss.to...)
	}
	ss.srv.record(e)
}

// refuse records the refusal e and returns it for go-smtp to write. After
// a 421 the patched go-smtp closes the connection once its buffered
// replies are sent (RFC 5321 section 3.8); writing the 421 here would put
// it ahead of the replies to commands pipelined before it.
func (ss *session) refuse(stage Stage, arg string, e *smtp.SMTPError, by Answerer) error {
	ss.event(stage, arg, replyLine(e), by)
	return e
}

// decide applies the current script at stage: the first matching rule,
// then the rate limits. It reports done when they decided the reply
// (returned as err) or dropped the connection; otherwise the command
// proceeds, and the rule is returned for a 2xx text.
func (ss *session) decide(stage Stage, arg string, matchArgs ...string) (Rule, bool, error) {
	st := ss.srv.script()
	r, ok := st.rules.decide(stage, matchArgs...)
	if ok && r.Delay > 0 && !ss.srv.pause(r.Delay) {
		ss.nc.Close()
		return r, true, errServerClosed
	}
	switch {
	case ok && r.Drop:
		ss.event(stage, arg, replyDropped, ByRule)
		ss.nc.Close()
		return r, true, errDropped
	case ok && r.Code >= 400:
		return r, true, ss.refuse(stage, arg, r.smtpError(), ByRule)
	}
	sender := ss.from
	if stage == StageMail {
		sender = arg
	}
	if l, limited := st.limits.take(ss.srv.now(), stage, ss.ip, sender, matchArgs...); limited {
		return r, true, ss.refuse(stage, arg, l.smtpError(), ByRateLimit)
	}
	if stage == StageEHLO || ok && r.Code/100 == 2 {
		// Personas answer at greeting, mail, rcpt and data, and a matching
		// 2xx rule overrides them: "everyone is unknown but vip@".
		return r, false, nil
	}
	seen := ss.srv.seenAt(stage, ss.ip)
	seen.From, seen.Data, seen.HasPTR = sender, ss.data, ss.hasPTR
	if stage == StageRcpt {
		seen.Rcpt = arg
	}
	e, by, open := ss.srv.askPersonas(st, seen)
	switch {
	case !open:
		ss.nc.Close()
		return r, true, errServerClosed
	case e != nil:
		return r, true, ss.refuse(stage, arg, e, by)
	}
	return r, false, nil
}

func (ss *session) Mail(from string, opts *smtp.MailOptions) error {
	if len(ss.srv.users) > 0 && ss.authUser == "" {
		ss.event(StageMail, from, replyLine(errAuthRequired), ByDefault)
		return errAuthRequired
	}
	if _, done, err := ss.decide(StageMail, from, from); done {
		return err
	}
	ss.from = from
	if opts != nil {
		ss.mail = *opts
	}
	ss.event(StageMail, from, fmt.Sprintf("250 2.0.0 Roger, accepting mail from <%s>", from), ByDefault)
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	rule, done, err := ss.decide(StageRcpt, to, to)
	if done {
		return err
	}
	if st := ss.srv.script(); st.Greylist > 0 {
		if wait := ss.srv.grey.check(ss.srv.now(), st.Greylist, st.GreylistExpiry, ss.ip, ss.from, to); wait > 0 {
			text := st.GreylistText
			if text == "" {
				text = fmt.Sprintf("Greylisted, try again in %d seconds", int(math.Ceil(wait.Seconds())))
			}
			e := &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: text}
			return ss.refuse(StageRcpt, to, e, ByGreylist)
		}
	}
	ss.to = append(ss.to, to)
	ss.thens = append(ss.thens, rule.Then)
	ss.event(StageRcpt, to, fmt.Sprintf("250 2.0.0 I'll make sure <%s> gets this", to), ByDefault)
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
			ss.event(StageData, arg, replyLine(se), ByDefault)
			return se
		}
		ss.event(StageData, arg, "(read error: "+err.Error()+")", ByDefault)
		return err
	}
	ss.data = body
	rule, done, serr := ss.decide(StageData, arg, append([]string{ss.from}, ss.to...)...)
	ss.data = nil
	if done {
		return serr
	}
	id := ss.srv.message(Message{
		Time:     ss.srv.now(),
		Client:   ss.client,
		Helo:     ss.helo,
		From:     ss.from,
		To:       append([]string(nil), ss.to...),
		Data:     body,
		Size:     n,
		TLS:      ss.tls,
		AuthUser: ss.authUser,
		BodyType: string(ss.mail.Body),
		UTF8:     ss.mail.UTF8,
	})
	ss.scheduleReports(id)
	reply, by, result := "250 2.0.0 OK: queued", ByDefault, error(nil)
	if rule.Code/100 == 2 {
		e := rule.smtpError()
		reply, by, result = replyLine(e), ByRule, e // go-smtp writes a 2xx SMTPError as the success line
	}
	e := Event{Client: ss.client, Stage: StageData, Arg: arg, Reply: reply, By: by, From: ss.from, To: append([]string(nil), ss.to...), MessageID: id}
	ss.srv.record(e)
	return result
}

// scheduleReports schedules the reports that rules asked for with "then"
// for the recipients of message id, now that it is recorded.
func (ss *session) scheduleReports(id string) {
	for i, t := range ss.thens {
		if t.Report == ReportNone {
			continue
		}
		m, _ := ss.srv.messageByID(id)
		ss.srv.reports.schedule(pendingReport{due: m.Time.Add(t.After), msg: m, rcpt: ss.to[i], then: t})
	}
}

func (ss *session) Reset() {
	ss.from = ""
	ss.mail = smtp.MailOptions{}
	ss.to = nil
	ss.thens = nil
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
	ss.event(StageAuth, mech, replyLine(smtp.ErrAuthUnknownMechanism), ByDefault)
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
		ss.event(StageAuth, arg, replyLine(smtp.ErrAuthFailed), ByDefault)
		return smtp.ErrAuthFailed
	}
	ss.authUser = user
	ss.event(StageAuth, arg, "235 2.0.0 Authentication succeeded", ByDefault)
	return nil
}
