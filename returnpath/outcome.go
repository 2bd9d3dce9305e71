package returnpath

import (
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/returnpath/report"
)

// outcome turns what a report says about recipient rcpt of env into its
// event and, for a permanent bounce or a complaint, its suppression
// entry; false when it says nothing to record.
func (r *Recorder) outcome(rep report.Report, from string, env *queue.Envelope, rcpt string) (queue.Event, *queue.Suppression, bool) {
	ev := queue.Event{QueueID: env.ID, MessageID: env.MessageID, From: env.From, Recipient: rcpt, Async: true, Tenant: env.Sender.Tenant}
	if !r.trusted(rep.Kind, from) {
		return ev, nil, false
	}
	switch rep.Kind {
	case report.KindDSN:
		d, ok := dsnRecipient(rep.Recipients, rcpt)
		if !ok {
			return ev, nil, false
		}
		ev.Reply, ev.EnhancedCode, ev.RemoteMTA = d.Reply, d.Status, d.RemoteMTA
		switch d.Action {
		case report.ActionDelayed:
			ev.Type = queue.EventDelayed
			return ev, nil, true
		case report.ActionDelivered, report.ActionExpanded:
			// A success DSN (NOTIFY=SUCCESS, RFC 3461 section 4.1): the
			// final hop's confirmation. expanded is delivered too, then
			// passed on to a list or alias (RFC 3464 section 2.3.3).
			ev.Type = queue.EventDelivered
			return ev, nil, true
		}
		ev.Type = queue.EventBounced
		if ev.EnhancedCode == "" {
			ev.EnhancedCode = "5.0.0" // RFC 3464 section 2.3.4 requires Status; a report without one still failed
		}
	case report.KindBounce:
		ev.Type, ev.Reply, ev.EnhancedCode = queue.EventBounced, rep.Reply, rep.Status
	case report.KindDelay:
		ev.Type, ev.Reply, ev.EnhancedCode = queue.EventDelayed, rep.Reply, rep.Status
		return ev, nil, true
	case report.KindFeedback:
		if !complaint(rep.FeedbackType) {
			return ev, nil, false
		}
		ev.Type, ev.FeedbackType = queue.EventComplained, rep.FeedbackType
		return ev, &queue.Suppression{Address: rcpt, Source: queue.SourceComplaint, Reply: "complaint: " + rep.FeedbackType, Scope: r.scopeOf(env)}, true
	case report.KindAutoReply:
		ev.Type = queue.EventAutoReplied
		return ev, nil, true
	default:
		return ev, nil, false
	}
	if ev.EnhancedCode == "5.0.0" {
		// Only from <> (trusted): Exim says 5.0.0 for every failure and
		// gives the reason in words; read the status they mean.
		if code, line := report.Specific(ev.Reply, rep.Text); code != "" {
			ev.EnhancedCode = code
			if ev.Reply == "" {
				ev.Reply = line
			}
		}
	}
	if r.o.Suppression != nil && r.o.Suppression.AutoStatus(ev.EnhancedCode) {
		reply := ev.Reply
		if reply == "" {
			reply = ev.EnhancedCode
		}
		return ev, &queue.Suppression{Address: rcpt, Source: queue.SourceAsyncBounce, Reply: reply, Scope: r.scopeOf(env)}, true
	}
	return ev, nil, true
}

// dsnRecipient picks the block of a DSN about rcpt: the one naming it as
// Original- or Final-Recipient, else (a forwarder reports the address it
// forwarded to) the first failed or delayed one, else the first
// delivered or expanded one. Blocks saying relayed (to a hop that will
// confirm nothing, RFC 3464 section 2.3.3) record nothing: the message
// is not known to have arrived.
func dsnRecipient(rs []report.Recipient, rcpt string) (report.Recipient, bool) {
	var problem, success *report.Recipient
	for i := range rs {
		d := &rs[i]
		var first **report.Recipient
		switch d.Action {
		case report.ActionFailed, report.ActionDelayed:
			first = &problem
		case report.ActionDelivered, report.ActionExpanded:
			first = &success
		default:
			continue
		}
		if equalFold(d.Final, rcpt) || equalFold(d.Original, rcpt) {
			return *d, true
		}
		if *first == nil {
			*first = d
		}
	}
	switch {
	case problem != nil:
		return *problem, true
	case success != nil:
		return *success, true
	}
	return report.Recipient{}, false
}

// complaint says whether a feedback report of type ft is the recipient's
// complaint: not for RFC 6430's not-spam (the reporter says the message is
// NOT spam) nor RFC 6591's auth-failure (a message failed SPF or DKIM; the
// recipient said nothing). Those suppress no one.
func complaint(ft string) bool {
	return ft != "not-spam" && ft != "auth-failure"
}

// scopeOf is the suppression scope of env's sender (global without a
// list).
func (r *Recorder) scopeOf(env *queue.Envelope) string {
	if r.o.Suppression == nil {
		return ""
	}
	return string(r.o.Suppression.ScopeOf(env.Sender))
}
