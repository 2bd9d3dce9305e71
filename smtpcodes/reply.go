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
}

// String renders the reply the way logs and DSN Diagnostic-Code fields want
// it: "451 4.7.1 Greylisted" for a server reply, "4.4.1 connection refused"
// for a local one. It is our canonical form, not necessarily the verbatim
// wire text (an enhanced code derived by us is included too); ParseReply
// reads it back to an equal Reply.
func (r Reply) String() string {
	s := ""
	if r.Code != 0 {
		s = strconv.Itoa(r.Code)
	}
	for _, part := range []string{r.Enhanced, r.Text} {
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
