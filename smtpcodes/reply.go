package smtpcodes

import "strconv"

// Reply is the meaning of one SMTP reply or local delivery error. Delivery
// code records it per recipient, the queue keeps it as the "last error" and
// the DSN writer turns it into Status and Diagnostic-Code fields.
type Reply struct {
	// Class is what to do with the recipients the reply applies to.
	Class Class
	// Code is the three-digit SMTP reply code; 0 when the reply was
	// synthesized from a local error and no server answered.
	Code int
	// Enhanced is the RFC 3463 status code ("4.4.1"): the server's when it
	// gave one, else derived from Class and the stage. Its class digit always
	// agrees with Class.
	Enhanced string
	// Text is the server's text (multi-line replies joined by spaces), or a
	// description of the local error. One line, no control characters.
	Text string
	// Sent is the enhanced code exactly as the server sent it ("5.2.2" for
	// a 552 at RCPT, whose Enhanced is 4.2.2), or "" when it sent none (or
	// an invalid one). Quote uses it: a log line or a DSN Diagnostic-Code
	// must never show a code the server did not send.
	Sent string
}

// String renders the reply the way shaping rules and suspension causes
// see it: "451 4.7.1 Greylisted" for a server reply, with Enhanced (our
// status, class digit agreeing with Class, derived when the server sent
// none), and "4.4.1 connection refused" for a local one. ParseReply
// reads it back to an equal Reply (but for Sent). Quote is the form for
// logs and reports.
func (r Reply) String() string { return r.render(r.Enhanced) }

// Quote renders the reply as the server sent it, for the log, the stored
// last reply and a DSN Diagnostic-Code: its own enhanced code if it gave
// one ("552 5.2.2 Mailbox full", though a 552 at RCPT is transient and its
// Enhanced 4.2.2), none if it did not ("500 what"), never a code of ours.
// A local error reads as in String ("4.4.1 connection refused").
func (r Reply) Quote() string {
	if r.Code == 0 {
		return r.String()
	}
	return r.render(r.Sent)
}

func (r Reply) render(enh string) string {
	s := ""
	if r.Code != 0 {
		s = strconv.Itoa(r.Code)
	}
	for _, part := range []string{enh, r.Text} {
		if part == "" {
			continue
		}
		if s != "" {
			s += " "
		}
		s += part
	}
	return s
}

// Remote reports whether a server actually sent this reply (Code != 0), as
// opposed to one synthesized from a local error. A DSN names the remote host
// only for remote replies.
func (r Reply) Remote() bool { return r.Code != 0 }

// SuspendsDestination reports whether the reply says the whole destination,
// not just this message or recipient, is in trouble: a 421 means the server
// is shutting the transmission channel down (RFC 5321 §3.8, §4.2.3), so the
// other queued messages for it should wait rather than hammer it.
func (r Reply) SuspendsDestination() bool { return r.Code == 421 }
