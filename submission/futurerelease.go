package submission

import (
	"fmt"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// Send later: a client may ask relayq to hold a message and make no
// attempt before a time, by FUTURERELEASE (RFC 4865: MAIL HOLDFOR=seconds
// or HOLDUNTIL=date-time) or the HTTP API's send_at. The hold is kept as
// queue.Envelope.Release; nothing of the parameter goes to the next hop
// (relayq builds its own MAIL). Options.MaxHold bounds it: 0 offers no
// FUTURERELEASE and refuses every hold in the future.

// Hold is a transaction's requested release: For after the arrival, or
// Until. The zero Hold is none.
type Hold struct {
	For   time.Duration
	Until time.Time
}

// releaseAt is the release time of a message arriving at now; zero for
// none. A time in the past means now (RFC 4865 section 3), which the queue
// stores as no hold.
func (h Hold) releaseAt(now time.Time) time.Time {
	if h.For > 0 {
		return now.Add(h.For)
	}
	return h.Until
}

// CheckHold refuses a hold beyond Options.MaxHold from now with RFC 4865
// section 3's 501 5.5.4 (HTTP 400).
func (a Acceptor) CheckHold(c Client, h Hold) error {
	now := a.s.opts.Clock.Now()
	if h.For < 0 {
		return a.reject(c, RejectSyntax, errHoldRange(a.s.opts.MaxHold))
	}
	if at := h.releaseAt(now); !at.IsZero() && at.After(now.Add(a.s.opts.MaxHold)) {
		return a.reject(c, RejectSyntax, errHoldRange(a.s.opts.MaxHold), "release", at)
	}
	return nil
}

func errHoldRange(max time.Duration) *smtp.SMTPError {
	return &smtp.SMTPError{Code: 501, EnhancedCode: smtp.EnhancedCode{5, 5, 4},
		Message: fmt.Sprintf("Requested hold is beyond the maximum of %d seconds (RFC 4865)", int64(max/time.Second))}
}

// futureRelease is go-smtp's FutureRelease hook: what EHLO advertises,
// max-future-release-interval and max-future-release-date-time (RFC 4865
// section 3). Nil when holds are off.
func (s *Server) futureRelease() func() (time.Duration, time.Time) {
	if s.opts.MaxHold <= 0 {
		return nil
	}
	return func() (time.Duration, time.Time) {
		return s.opts.MaxHold, s.opts.Clock.Now().Add(s.opts.MaxHold)
	}
}

// mailHold is the Hold of a MAIL command's HOLDFOR or HOLDUNTIL.
func mailHold(o *smtp.MailOptions) Hold {
	switch {
	case o == nil:
	case o.HoldFor != nil:
		return Hold{For: *o.HoldFor}
	case o.HoldUntil != nil:
		return Hold{Until: *o.HoldUntil}
	}
	return Hold{}
}
