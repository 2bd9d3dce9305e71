package delivery

import (
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
}

// outcomes turns per-recipient replies into queue outcomes and builds the
// DSNs those outcomes call for (see judge).
func (a *attempter) outcomes(set *Settings, env *queue.Envelope, rcpts []queue.Recipient, results []smtpclient.RcptResult, end time.Time) ([]queue.Outcome, []queue.Notice) {
	v := a.judge(set, env, rcpts, results, end)
	return v.outcomes, a.reports.forVerdict(set, env, v, end)
}

// judge turns per-recipient replies into queue outcomes: 2xx delivered,
// 5xx bounced, 4xx deferred by the backoff (or the reply's own "try again
// in N", whichever is later) until max_attempts or max_age, then bounced with
// the last reply.
func (a *attempter) judge(set *Settings, env *queue.Envelope, rcpts []queue.Recipient, results []smtpclient.RcptResult, end time.Time) verdict {
	v := verdict{rcpts: rcpts}
	jit := a.flights.jitter(env.ID, a.draws.jitter)
	for i, r := range rcpts {
		var res smtpclient.RcptResult
		if i < len(results) {
			res = results[i]
		} else {
			res = smtpclient.RcptResult{Address: r.Address, Reply: smtpcodes.Classify(smtpcodes.StageData, smtpcodes.Transientf("4.3.0", "no result for recipient"))}
		}
		reply := res.Reply.String()
		o := queue.Outcome{Address: r.Address, Reply: reply, RemoteMTA: res.RemoteMTA, TLS: res.TLS.Name()}
		r.LastReply, r.RemoteMTA = reply, res.RemoteMTA
		switch res.Reply.Class {
		case smtpcodes.Success:
			o.Status = queue.StatusDelivered
		case smtpcodes.Permanent:
			o.Status = queue.StatusBounced
			o.Suppress = set.Suppress != nil && set.Suppress(res.Reply)
			v.failed = append(v.failed, r)
		default:
			next, giveUp := jit.next(set.Policy, r, env.Created, end)
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
			if giveUp {
				o.Status, o.Expired = queue.StatusBounced, true
				v.failed = append(v.failed, r)
				break
			}
			o.Status = queue.StatusDeferred
			o.NextAttempt = next
			if set.WarnAfter > 0 && !r.Warned && end.Sub(env.Created) >= set.WarnAfter && notifies(r.Notify, "DELAY") {
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
		o := &v.outcomes[i]
		switch {
		case o.Status == queue.StatusBounced && notifies(v.rcpts[i].Notify, "FAILURE"):
			o.Report = queue.ReportFailed
		case o.Status == queue.StatusDeferred && o.Warned:
			o.Report = queue.ReportDelayed
		}
	}
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
