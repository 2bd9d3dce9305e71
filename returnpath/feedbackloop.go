package returnpath

import (
	"strings"

	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/returnpath/report"
	"github.com/relayq/relayq/returnpath/verp"
)

// feedbackLoop is the configured loop whose fixed address to is, nil if none.
func (r *Recorder) feedbackLoop(to string) *FeedbackLoop {
	for i := range r.o.FeedbackLoops {
		if fl := &r.o.FeedbackLoops[i]; fl.Address != "" && strings.EqualFold(fl.Address, to) {
			return fl
		}
	}
	return nil
}

// tagFor names the message and recipient a report to addr is about: a
// VERP address names them itself; a feedback loop's fixed address has
// them found in the report (attribute). False for postmaster@ and for
// what cannot be attributed.
func (r *Recorder) tagFor(addr string, rep report.Report, from string) (verp.Tag, bool) {
	if tag, err := r.o.Signer.Verify(addr); err == nil {
		return tag, true
	}
	fl := r.feedbackLoop(addr)
	if fl == nil {
		return verp.Tag{}, false // postmaster@
	}
	tag, ok, err := r.attribute(fl, rep, from)
	if err != nil || !ok {
		r.o.Logger.Info("return path: a feedback-loop report that names no message of ours; nothing recorded",
			"to", addr, "from", from, "kind", rep.Kind.String(), "err", err)
		r.Stats.Ignored.Add(1)
	}
	return tag, ok && err == nil
}

// attribute finds what a complaint sent to fl's fixed address is about,
// if it came from one of fl's senders: the returned original's
// Return-Path, when it is one of our VERP addresses (its signature
// verifies), else its Message-ID, in the history, with the recipient the
// report names (or the message's only one).
func (r *Recorder) attribute(fl *FeedbackLoop, rep report.Report, from string) (verp.Tag, bool, error) {
	if rep.Kind != report.KindFeedback || !fl.sends(from) {
		return verp.Tag{}, false, nil
	}
	if tag, err := r.o.Signer.Verify(rep.OriginalReturnPath); err == nil {
		return tag, true, nil
	}
	if strings.Trim(rep.OriginalMessageID, "<> ") == "" {
		return verp.Tag{}, false, nil
	}
	found, err := r.o.Store.History().List(queue.HistoryQuery{MessageID: rep.OriginalMessageID, Limit: 2})
	if err != nil || len(found) != 1 { // none, or a Message-ID used twice: whose?
		return verp.Tag{}, false, err
	}
	env := &found[0].Envelope
	for i, rc := range env.Recipients {
		if equalFold(rc.Address, rep.OriginalRcptTo) || len(env.Recipients) == 1 {
			return verp.Tag{QueueID: env.ID, Recipient: i}, true, nil
		}
	}
	return verp.Tag{}, false, nil
}
