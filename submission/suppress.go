package submission

import (
	"io"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/relayq/relayq/queue"
)

// suppressed refuses a recipient on the suppression list with 550 5.1.1
// and records a suppressed event; nil lets it through. A list that cannot
// be read lets mail through: the list must never lose mail.
func (s *session) suppressed(to string) error {
	sp := s.srv.opts.Suppressions
	if sp == nil {
		return nil
	}
	text, refused, err := sp.Refuse(to, s.authUser != "", s.trusted())
	if err != nil {
		s.log.Warn("suppression list unreadable; recipient accepted", "to", to, "err", err)
		return nil
	}
	if !refused {
		return nil
	}
	reply := &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: text}
	ev := queue.Event{Type: queue.EventSuppressed, Recipient: to, Reply: "550 5.1.1 " + text}
	if s.from != nil {
		ev.From = *s.from
	}
	if err := s.srv.opts.Queue.AddEvents(ev); err != nil {
		s.log.Error("recording a suppressed event failed", "to", to, "err", err)
	}
	return s.reject(RejectSuppressed, reply, "to", to)
}

// headerScan wraps out with the scanner of the header section; it adds
// missing Message-ID and Date only for authenticated and trusted clients,
// and only when configured.
func (s *session) headerScan(out io.Writer, id string, now time.Time) *headerScan {
	hs := &headerScan{w: out}
	if s.srv.opts.AddMissingHeaders && s.mayRelay() {
		host := s.srv.opts.Hostname
		hs.add = func() (string, time.Time) { return "<" + id + "@" + host + ">", now }
	}
	return hs
}
