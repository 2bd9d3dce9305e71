package returnpath

import (
	"strings"

	"github.com/relayq/relayq/returnpath/report"
)

// FeedbackLoop is a provider's complaint feedback loop (bounces.feedback_loops):
// the envelope senders its reports come from, and the fixed address of
// the bounce domain it sends them to, if any.
type FeedbackLoop struct {
	// Address, if set, is taken at RCPT; reports to it are attributed by
	// the returned original (attribute).
	Address string
	// Senders are addresses, or "@domain" for every address of domain.
	Senders []string
	// ForwardTo receives, with bounces.forward, what reaches Address and
	// cannot be attributed to a message of ours: a provider's report is
	// never dropped unread.
	ForwardTo string
}

// trusted says whether a report of kind k may be recorded when it came
// from envelope sender from. Delivery reports (DSNs, text bounces and
// delay warnings) come from <> (RFC 5321 section 4.5.5, RFC 3464 section
// 2): from anyone else they are a person's or a forger's words. A
// complaint comes from <> or from a configured feedback-loop sender.
// Auto-replies come from anyone: they suppress nothing.
func (r *Recorder) trusted(k report.Kind, from string) bool {
	switch k {
	case report.KindDSN, report.KindBounce, report.KindDelay:
		return from == ""
	case report.KindFeedback:
		return from == "" || r.feedbackSender(from)
	case report.KindAutoReply:
		return true
	}
	return false
}

// feedbackSender says whether from is a sender of a configured feedback loop.
func (r *Recorder) feedbackSender(from string) bool {
	for _, fl := range r.o.FeedbackLoops {
		if fl.sends(from) {
			return true
		}
	}
	return false
}

// sends says whether from is one of fl's senders.
func (fl *FeedbackLoop) sends(from string) bool {
	from = strings.ToLower(from)
	_, domain, _ := strings.Cut(from, "@")
	for _, s := range fl.Senders {
		s = strings.ToLower(s)
		if s == from || strings.HasPrefix(s, "@") && s[1:] == domain && domain != "" {
			return true
		}
	}
	return false
}
