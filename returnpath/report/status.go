package report

import (
	"bufio"
	"io"
	"strings"

	"github.com/emersion/go-message"
)

// validStatus returns s if it is an RFC 3463 status code: class 2, 4 or
// 5, subject and detail of 1 to 3 digits.
func validStatus(s string) string {
	if len(s) < 5 || len(s) > 9 || (s[0] != '2' && s[0] != '4' && s[0] != '5') || s[1] != '.' {
		return ""
	}
	parts := strings.Split(s[2:], ".")
	if len(parts) != 2 {
		return ""
	}
	for _, p := range parts {
		if len(p) == 0 || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return ""
		}
	}
	return s
}

// findStatus is the first status code standing as a word in line.
func findStatus(line string) string {
	for i := 0; i+5 <= len(line); i++ {
		c := line[i]
		if (c != '2' && c != '4' && c != '5') || line[i+1] != '.' || (i > 0 && isWordByte(line[i-1])) {
			continue
		}
		j := i + 2
		for j < len(line) && (isDigit(line[j]) || line[j] == '.') {
			j++
		}
		if j < len(line) && isWordByte(line[j]) {
			continue
		}
		if s := validStatus(strings.TrimSuffix(line[i:j], ".")); s != "" && s[0] != '2' {
			return s
		}
	}
	return ""
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWordByte(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '_'
}

// bounceSubjects are the subjects the common MTAs give their text bounces
// (Postfix, Exim, qmail/Yahoo, Sendmail, Exchange).
var bounceSubjects = []string{"undeliver", "delivery status notification", "mail delivery failed",
	"failure notice", "returned mail", "delivery failure", "delivery has failed", "mail system error"}

// looksBounce says whether a message without a delivery-status part
// still presents itself as a bounce: from the mailer daemon or postmaster,
// with Exim's X-Failed-Recipients, or with a bounce's subject that is not
// a reply's ("Re: Undeliverable ..." is a person writing). A status code
// in the text alone does not make a bounce: people quote "section 5.1.2".
func looksBounce(h message.Header) bool {
	from := strings.ToLower(h.Get("From"))
	if strings.Contains(from, "mailer-daemon@") || strings.Contains(from, "postmaster@") || h.Has("X-Failed-Recipients") {
		return true
	}
	subj := strings.ToLower(strings.TrimSpace(h.Get("Subject")))
	if strings.HasPrefix(subj, "re:") || strings.HasPrefix(subj, "aw:") {
		return false
	}
	for _, s := range bounceSubjects {
		if strings.Contains(subj, s) {
			return true
		}
	}
	return false
}

// delaySubjects and delayTexts are how the common MTAs say a text report
// is a warning about mail they still retry: Exim ("Warning: message ...
// delayed 24 hours", "No action is required on your part"), Sendmail
// ("Warning: could not send message for past 4 hours", "Will keep trying
// until message is 5 days old"), Postfix ("Delayed Mail (still being
// retried)"), Gmail ("Delivery Status Notification (Delay)").
var (
	delaySubjects = []string{"warning", "delayed", "(delay)", "still being retried"}
	delayTexts    = []string{"warning only", "no action is required", "will keep trying", "still trying",
		"will be retried", "will retry", "still being retried", "not yet been delivered", "has been delayed"}
)

// delayWarning says whether a text report, by its subject or the start of
// its text (lower-cased), says delivery is still being attempted: then a
// 4.x.x status in it is a delay, not the cause of a failure.
func delayWarning(h message.Header, text string) bool {
	subj := strings.ToLower(h.Get("Subject"))
	for _, s := range delaySubjects {
		if strings.Contains(subj, s) {
			return true
		}
	}
	for _, s := range delayTexts {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// autoReply says whether the header is an automatic response's: RFC 3834
// section 5's Auto-Submitted: auto-replied, or the vacation programs'
// older marks. It is asked only of a message that is neither a report nor
// a bounce: Precedence: bulk on a bounce does not make it a reply.
func autoReply(h message.Header) bool {
	if strings.EqualFold(firstWord(h.Get("Auto-Submitted")), "auto-replied") {
		return true
	}
	if h.Has("X-Autoreply") || h.Has("X-Autorespond") || h.Has("X-Vacation") {
		return true
	}
	// vacation(1) sets no Auto-Submitted: its manual has the user's reply
	// carry Precedence: bulk (junk is the other old mark of a robot).
	switch strings.ToLower(strings.TrimSpace(h.Get("Precedence"))) {
	case "auto_reply", "bulk", "junk":
		return true
	}
	// Exchange and Outlook mark their out-of-office answers auto-generated
	// (RFC 3834 section 5's other value) and name them in the subject.
	subj := strings.ToLower(strings.TrimSpace(h.Get("Subject")))
	return strings.EqualFold(firstWord(h.Get("Auto-Submitted")), "auto-generated") &&
		(strings.HasPrefix(subj, "automatic reply:") || strings.HasPrefix(subj, "out of office"))
}

func bufioReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, 4096) }
