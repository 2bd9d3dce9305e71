package dsn

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// DefaultMaxReturn is the cap on returned original bytes when
// Report.MaxReturn is zero: enough for the headers and the start of the body
// that let the sender recognise the message, without mailing back a large
// attachment (Postfix's bounce_size_limit is 50 kB; we are a little kinder).
const DefaultMaxReturn = 256 << 10

// Actions a recipient may have in a DSN (RFC 3464 §2.3.3).
const (
	ActionFailed    = "failed"
	ActionDelayed   = "delayed"
	ActionDelivered = "delivered"
	ActionRelayed   = "relayed"
	ActionExpanded  = "expanded"
)

// Recipient is what happened to one recipient: one per-recipient group of
// the delivery-status part (RFC 3464 §2.3).
type Recipient struct {
	// Final is the recipient address we tried (Final-Recipient).
	Final string
	// Original is the ORCPT value after xtext decoding, "rfc822;user@x",
	// or "" when the client gave none; emitted as Original-Recipient.
	Original string
	// Action is one of the Action constants.
	Action string
	// Status is the RFC 3463 code, "5.1.1".
	Status string
	// RemoteMTA is the next hop's host name, "" if none answered.
	RemoteMTA string
	// Diagnostic is the remote reply ("550 5.1.1 No such user") or a local
	// description ("4.4.1 connection refused"); "" for none.
	Diagnostic string
	// LastAttempt is when delivery was last tried; zero to omit.
	LastAttempt time.Time
	// WillRetryUntil is when a delayed recipient gives up; used only for
	// ActionDelayed, zero to omit.
	WillRetryUntil time.Time
}

// Report is one DSN: who sends it to whom about which message.
type Report struct {
	// ReportingMTA is our host name (Reporting-MTA, and the From default).
	ReportingMTA string
	// From is the DSN's From: header; "" means
	// "Mail Delivery System <MAILER-DAEMON@ReportingMTA>".
	From string
	// To is the original envelope sender, who receives the DSN.
	To string
	// EnvID is the ENVID after xtext decoding, "" for none.
	EnvID string
	// Arrival is when we accepted the message; zero to omit.
	Arrival time.Time
	// Date is the DSN's Date: header.
	Date time.Time
	// MessageID is the DSN's Message-ID without <>; the caller makes it unique.
	MessageID string
	// Boundary is the MIME boundary; the caller supplies it so output is
	// deterministic. Write keeps only RFC 2046 §5.1.1 characters (no space),
	// at most 70, and changes it if the content happens to contain it, so
	// any value (even "") works.
	Boundary string
	// QueueID is the original message's queue ID, quoted in the text and
	// in an X-Relayq-Queue-ID header.
	QueueID string
	// Recipients are the recipients this DSN reports on; at least one.
	Recipients []Recipient
	// ReturnFull returns the whole original (RET=FULL) instead of only its
	// header section.
	ReturnFull bool
	// MaxReturn caps the returned original in bytes, cut at a line end;
	// 0 means DefaultMaxReturn, negative means return nothing.
	MaxReturn int64
	// SMTPUTF8: the original was sent with SMTPUTF8 (RFC 6531), an
	// internationalized message. RFC 6533 section 4: its report returns
	// it as message/global (RFC 6532 section 3.7) or its header section as
	// message/global-headers, and where a recipient's fields carry UTF-8,
	// the status part is message/global-delivery-status with the UTF-8 as
	// it is (the utf-8-address form of section 3) instead of escaped.
	SMTPUTF8 bool
}

// global reports whether r's status part is message/global-delivery-status:
// the message is internationalized and a field would carry UTF-8.
func (r *Report) global() bool {
	if !r.SMTPUTF8 {
		return false
	}
	for _, rc := range r.Recipients {
		if !isASCII(rc.Final) || !isASCII(rc.Original) || !isASCII(rc.Diagnostic) {
			return true
		}
	}
	return false
}

var statusCode = regexp.MustCompile(`^[245]\.[0-9]{1,3}\.[0-9]{1,3}$`)

// boundaryBase makes any caller string a usable boundary: RFC 2046 §5.1.1
// bchars without the space (so header folding can never alter it), at most
// 70 of them, "relayq-dsn" if none are left. A bad boundary is not worth
// losing a bounce over.
func boundaryBase(s string) string {
	b := []byte(nil)
	for i := 0; i < len(s) && len(b) < 70; i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("'()+_,-./:=?", c) >= 0 {
			b = append(b, c)
		}
	}
	if len(b) == 0 {
		return "relayq-dsn"
	}
	return string(b)
}

// check reports why r cannot become a valid DSN.
func (r *Report) check() error {
	switch {
	case r.ReportingMTA == "":
		return errors.New("dsn: Reporting-MTA is required (RFC 3464 §2.2.2)")
	case r.To == "":
		return errors.New("dsn: no one to send the report to (a null sender never gets a DSN)")
	case r.Date.IsZero():
		return errors.New("dsn: date is required")
	case r.MessageID == "":
		return errors.New("dsn: message ID is required")
	case len(r.Recipients) == 0:
		return errors.New("dsn: no recipients to report on")
	}
	for i, rc := range r.Recipients {
		switch rc.Action {
		case ActionFailed, ActionDelayed, ActionDelivered, ActionRelayed, ActionExpanded:
		default:
			return fmt.Errorf("dsn: recipient %d: unknown action %q", i, rc.Action)
		}
		if !statusCode.MatchString(rc.Status) {
			return fmt.Errorf("dsn: recipient %d: status %q is not an RFC 3463 code", i, rc.Status)
		}
		if rc.Final == "" {
			return fmt.Errorf("dsn: recipient %d: no final recipient address", i)
		}
	}
	return nil
}

// has reports whether any recipient has the given action.
func (r *Report) has(action string) bool {
	for _, rc := range r.Recipients {
		if rc.Action == action {
			return true
		}
	}
	return false
}

// subject names the report by its gravest news.
func (r *Report) subject() string {
	switch {
	case r.has(ActionFailed):
		return "Undelivered Mail Returned to Sender"
	case r.has(ActionDelayed):
		return "Delayed Mail (still being retried)"
	}
	return "Successful Mail Delivery Report"
}
