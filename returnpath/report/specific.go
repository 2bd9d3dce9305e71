package report

import "strings"

// reasons are the words real MTAs use, in a bounce's text or diagnostic,
// for a failure whose status they leave generic (Exim's DSNs always say
// Status: 5.0.0 and give a routing failure's reason only in text), with
// the RFC 3463 status each means. Lower-cased; the first match wins.
var reasons = []struct{ text, status string }{
	// Exim, src/route.c: the message when no router accepts an address,
	// an unknown local part as much as an unroutable domain.
	{"unrouteable address", "5.1.0"},
	// Exim's ":fail: Unknown user" (redirect router), Sendmail's "User
	// unknown", Postfix's "User unknown in local recipient table" and "in
	// virtual mailbox table" (smtpd).
	{"unknown user", "5.1.1"},
	{"user unknown", "5.1.1"},
	{"no such user", "5.1.1"},
	// Gmail: "The email account that you tried to reach does not exist."
	{"the email account that you tried to reach does not exist", "5.1.1"},
	// Exchange / Microsoft 365: "RESOLVER.ADR.RecipientNotFound;
	// Recipient not found by SMTP address lookup".
	{"recipientnotfound", "5.1.10"},
	{"recipient not found by smtp address lookup", "5.1.10"},
	// Yahoo: "554 delivery error: dd This user doesn't have a yahoo.com
	// account".
	{"this user doesn't have a", "5.1.1"},
	// Postfix, smtp: "Host or domain name not found. Name service error
	// for name=... type=A: Host not found".
	{"host or domain name not found", "5.1.2"},
}

// Specific is the status a permanent failure reported with the generic
// 5.0.0 (or none) really has, read from its texts (the recipient's
// diagnostic first, then the report's text): a 5.x.x other than 5.0.0
// written in them, else the status of the first reason it names; with
// the line it was read from. "" when the texts say nothing more.
func Specific(texts ...string) (status, line string) {
	for _, t := range texts {
		for l := range strings.Lines(t) {
			if s := findStatus(l); strings.HasPrefix(s, "5.") && s != "5.0.0" {
				return s, oneLine(l)
			}
		}
	}
	for _, t := range texts {
		for l := range strings.Lines(t) {
			low := strings.ToLower(l)
			for _, r := range reasons {
				if strings.Contains(low, r.text) {
					return r.status, oneLine(l)
				}
			}
		}
	}
	return "", ""
}

// copyMarks begin the copy of the returned message in a text bounce
// (Exim, qmail, Sendmail): words after them are the original's, not the
// reporting MTA's.
var copyMarks = []string{"copy of the message", "original message follows", "returned message", "below this line"}

// beforeCopy is text up to the line that begins the returned copy.
func beforeCopy(text string) string {
	n := 0
	for l := range strings.Lines(text) {
		low := strings.ToLower(l)
		for _, m := range copyMarks {
			if strings.Contains(low, m) {
				return text[:n]
			}
		}
		n += len(l)
	}
	return text
}
