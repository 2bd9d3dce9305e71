package submission

import (
	"bytes"
	"errors"
	"net/netip"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/queue"
)

// Inbound turns a Server into the MX of one domain (the bounce domain of
// package returnpath) rather than a submission server: the same
// listeners, limits and timeouts, but anyone may send (it is the last
// hop, RFC 5321 section 3.6.2, not a relay), no AUTH is offered, every
// RCPT is Inbound's to decide, and an accepted message goes to Deliver,
// not the queue.
type Inbound interface {
	// Recipient decides one RCPT: nil accepts, an *smtp.SMTPError is the
	// reply.
	Recipient(to string) error
	// Deliver takes one message, at most MaxMessageBytes, as received
	// (dots unstuffed, CRLF lines) after the listener's own Received
	// field (RFC 5321 section 4.4: ESMTP or ESMTPS, never with AUTH,
	// which an Inbound server does not offer). It returns only after
	// what it keeps is durable: the 250 follows. An *smtp.SMTPError is
	// the reply; any other error is a 451.
	Deliver(from string, to []string, body []byte) error
}

// Admitter is an Inbound that limits who may hand it mail: Admit runs at
// each RCPT that Recipient accepted, with the client's address, and an
// *smtp.SMTPError it returns is the reply (a 4xx one defers just that
// recipient, and the sending MTA retries it later).
type Admitter interface {
	Admit(ip netip.Addr, to string) error
}

var errInboundUnavailable = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Report not recorded, try again later"}

// inboundMail is Mail for an Inbound server: any sender, <> included,
// within the size limit.
func (s *session) inboundMail(from string, opts *smtp.MailOptions) error {
	if s.from != nil {
		return s.reject(RejectSequence, errNestedMail, "from", from)
	}
	if from != "" && !validAddress(from) {
		return s.reject(RejectSyntax, errBadSender, "from", from)
	}
	if opts != nil && opts.Size > s.srv.opts.MaxMessageBytes {
		return s.reject(RejectSize, ErrTooBig, "declared_size", opts.Size)
	}
	f := from
	s.from = &f
	if opts != nil {
		s.mailOpts = *opts // SMTPUTF8 names the trace field's protocol
	}
	s.rcpts = s.rcpts[:0]
	return nil
}

// inboundRcpt is Rcpt for an Inbound server.
func (s *session) inboundRcpt(to string) error {
	if s.from == nil {
		return &smtp.SMTPError{Code: 503, EnhancedCode: smtp.EnhancedCode{5, 5, 1}, Message: "Bad sequence of commands"}
	}
	if !validAddress(to) {
		return s.reject(RejectSyntax, errBadRecipient, "to", to)
	}
	if len(s.rcpts) >= s.srv.opts.MaxRecipients {
		return s.reject(RejectRecipients, errTooManyRecipients, "to", to)
	}
	if err := s.srv.opts.Inbound.Recipient(to); err != nil {
		var se *smtp.SMTPError
		if errors.As(err, &se) {
			return s.reject(RejectRelay, se, "to", to)
		}
		return s.reject(RejectStorage, errInboundUnavailable, "to", to, "err", err)
	}
	if a, ok := s.srv.opts.Inbound.(Admitter); ok {
		if err := a.Admit(s.ip, to); err != nil {
			var se *smtp.SMTPError
			if errors.As(err, &se) {
				return s.reject(RejectRate, se, "to", to)
			}
			return s.reject(RejectStorage, errInboundUnavailable, "to", to, "err", err)
		}
	}
	if len(s.rcpts) == 0 {
		if lc := underlying(s.conn.Conn()); lc != nil {
			lc.setInTransaction(true)
		}
	}
	s.rcpts = append(s.rcpts, queue.Recipient{Address: to})
	return nil
}

// inboundData reads the body into memory (bounded by MaxMessageBytes)
// behind the trace field of this hop and hands it to Inbound.Deliver.
func (s *session) inboundData(read func(w *bytes.Buffer) error) error {
	var buf bytes.Buffer
	buf.Write(receivedHeader(receivedInfo{
		Helo: s.conn.Hostname(), IP: s.ip, Hostname: s.srv.opts.Hostname, TLS: s.tls,
		UTF8: s.mailOpts.UTF8, Rcpts: s.rcpts, Now: s.srv.opts.Clock.Now(),
	}))
	if err := read(&buf); err != nil {
		return err
	}
	to := make([]string, len(s.rcpts))
	for i, r := range s.rcpts {
		to[i] = r.Address
	}
	if err := s.srv.opts.Inbound.Deliver(*s.from, to, buf.Bytes()); err != nil {
		var se *smtp.SMTPError
		if errors.As(err, &se) {
			return se
		}
		s.log.Error("inbound report not recorded", "err", err)
		return s.reject(RejectStorage, errInboundUnavailable)
	}
	_ = s.conn.Conn().SetReadDeadline(time.Time{})
	return &smtp.SMTPError{Code: 250, EnhancedCode: smtp.EnhancedCode{2, 0, 0}, Message: "Ok: report accepted"}
}
