package delivery

import (
	"slices"
	"strings"
	"time"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtpcodes"
)

// verdict is what one attempt's replies come to: an outcome per recipient
// (in the order of rcpts) and the recipients owed a report.
type verdict struct {
	rcpts           []queue.Recipient
	outcomes        []queue.Outcome
	failed, delayed []queue.Recipient
	// relayed: delivered to a hop without DSN with NOTIFY=SUCCESS, owed a
	// "relayed" report (RFC 3461 section 5.2.2.1).
	relayed []queue.Recipient
}

// outcomes turns per-recipient replies into queue outcomes and builds the
// DSNs those outcomes call for (see judge).
func (a *attempter) outcomes(set *Settings, env *queue.Envelope, rcpts []queue.Recipient, results []smtpclient.RcptResult, end time.Time) ([]queue.Outcome, []queue.Notice) {
	v := a.judge(set, env, rcpts, results, nil, end)
	return v.outcomes, append(a.reports.forVerdict(set, env, v, end), a.reports.relayed(env, v.relayed, end)...)
}

// judge turns per-recipient replies into queue outcomes: 2xx delivered,
// 5xx bounced, 4xx deferred by the backoff (or the reply's own "try again
// in N", whichever is later) until max_attempts or max_age, then bounced with
// the last reply. A recipient whose reply suspended its scope until
// trail[i] waits that suspension and its own backoff step after it, so
// that other mail is the first the scope is tried with again.
func (a *attempter) judge(set *Settings, env *queue.Envelope, rcpts []queue.Recipient, results []smtpclient.RcptResult, trail []time.Time, end time.Time) verdict {
	v := verdict{rcpts: rcpts}
	jit := a.groups.jitter(env.ID, a.draws.jitter)
	for i, r := range rcpts {
		var res smtpclient.RcptResult
		if i < len(results) {
			res = results[i]
		} else {
			res = smtpclient.RcptResult{Address: r.Address, Reply: smtpcodes.Classify(smtpcodes.StageData, smtpcodes.Transientf("4.3.0", "no result for recipient"))}
		}
		reply := res.Reply.Quote() // as sent: the log and the reports quote it
		o := queue.Outcome{Address: r.Address, Reply: reply, RemoteMTA: res.RemoteMTA, TLS: res.TLS.Name()}
		r.LastReply, r.RemoteMTA = reply, res.RemoteMTA
		switch res.Reply.Class {
		case smtpcodes.Success:
			o.Status = queue.StatusDelivered
			if notifies(r.Notify, "SUCCESS") && !res.DSN {
				v.relayed = append(v.relayed, r)
			}
		case smtpcodes.Permanent:
			o.Status = queue.StatusBounced
			o.Suppress = set.Suppress != nil && set.Suppress(res.Reply)
			v.failed = append(v.failed, r)
		default:
			next, giveUp := jit.next(set.Policy, r, env.AgeStart(), end)
			if h, ok := smtpcodes.RetryHint(res.Reply.Text); ok {
				// A greylisting server that names its window: retrying inside
				// it would only waste an attempt.
				if h > a.maxHint {
					h = a.maxHint
				}
				if t := end.Add(h); t.After(next) {
					next = t
				}
			}
			if i < len(trail) && !trail[i].IsZero() {
				if t := trail[i].Add(next.Sub(end)); t.After(next) {
					next = t
				}
			}
			if giveUp {
				o.Status, o.Expired = queue.StatusBounced, true
				v.failed = append(v.failed, r)
				break
			}
			o.Status = queue.StatusDeferred
			o.NextAttempt = next
			if set.WarnAfter > 0 && !r.Warned && end.Sub(env.AgeStart()) >= set.WarnAfter && notifies(r.Notify, "DELAY") {
				o.Warned = true
				v.delayed = append(v.delayed, r)
			}
		}
		v.outcomes = append(v.outcomes, o)
	}
	return v
}

// hold marks each outcome of v whose recipient dsnWriter.forVerdict would name with
// the report it is owed (queue.Outcome.Report) instead: the last attempt
// of the message's pass builds one report for every mark (group.go). The
// marks are exactly what forVerdict would list: failures the recipient's
// NOTIFY asks for, and warnings (judge asked NOTIFY already).
func (v *verdict) hold() {
	for i := range v.outcomes {
		markOwed(&v.outcomes[i], v.rcpts[i].Notify)
	}
}

// markOwed marks o with the report it is owed, if any (see hold).
func markOwed(o *queue.Outcome, notify []string) {
	switch {
	case o.Status == queue.StatusBounced && notifies(notify, "FAILURE"):
		o.Report = queue.ReportFailed
	case o.Status == queue.StatusDeferred && o.Warned:
		o.Report = queue.ReportDelayed
	}
}

// withLeft adds to v's reports the recipients of env whose reports other
// jobs of the pass left marked (left), for one report on them all, and
// returns the marks that report clears. Recipients keep env's order, as
// when the marks are reported on their own (dsnWriter.queueMarked).
func (v verdict) withLeft(env *queue.Envelope, left []queue.Recipient) (verdict, []queue.Mark) {
	var marks []queue.Mark
	failed := append([]queue.Recipient(nil), v.failed...)
	delayed := append([]queue.Recipient(nil), v.delayed...)
	for _, r := range left {
		marks = append(marks, queue.Mark{Address: r.Address, Report: r.Report})
		switch r.Report {
		case queue.ReportFailed:
			failed = append(failed, r)
		case queue.ReportDelayed:
			delayed = append(delayed, r)
		}
	}
	order := func(a, b queue.Recipient) int { return indexOf(env, a.Address) - indexOf(env, b.Address) }
	slices.SortStableFunc(failed, order)
	slices.SortStableFunc(delayed, order)
	v.failed, v.delayed = failed, delayed
	return v, marks
}

// indexOf is the position of address among env's recipients.
func indexOf(env *queue.Envelope, address string) int {
	for i, r := range env.Recipients {
		if r.Address == address {
			return i
		}
	}
	return len(env.Recipients)
}

// owes reports whether any of outcomes marks a pending report.
func owes(outcomes []queue.Outcome) bool {
	for _, o := range outcomes {
		if o.Report != queue.ReportNone {
			return true
		}
	}
	return false
}

// notifies reports whether a recipient's RFC 3461 NOTIFY list asks for a
// report of this kind. No NOTIFY means the default, FAILURE and DELAY
// (RFC 3461 section 4.1).
func notifies(list []string, kind string) bool {
	if len(list) == 0 {
		return kind == "FAILURE" || kind == "DELAY"
	}
	for _, n := range list {
		if strings.EqualFold(n, kind) {
			return true
		}
	}
	return false
}

// marked returns the recipients of after (the message as an outcome left
// it) that outcomes marked as owed a report.
func marked(after *queue.Envelope, outcomes []queue.Outcome) []queue.Recipient {
	if after == nil || !owes(outcomes) {
		return nil
	}
	var left []queue.Recipient
	for _, o := range outcomes {
		if o.Report == queue.ReportNone {
			continue
		}
		for _, r := range after.Recipients {
			if r.Address == o.Address && r.Report == o.Report {
				left = append(left, r)
				break
			}
		}
	}
	return left
}
