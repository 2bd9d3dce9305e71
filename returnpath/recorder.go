package returnpath

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/relayq/relayq/internal/clock"
	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/returnpath/report"
	"github.com/relayq/relayq/returnpath/verp"
	"github.com/relayq/relayq/submission"
)

// Options configure a Recorder.
type Options struct {
	Store  *queue.Store
	Signer *verp.Signer
	// Suppression decides which statuses suppress (suppression.auto and
	// codes); nil suppresses none but complaints.
	Suppression *suppression.List
	// Forward, if set, hands an accepted report on to the original sender
	// (bounces.forward): Forwarder.Forward, which queues it wrapped in a
	// notice of relayq's own.
	Forward func(ctx context.Context, f Forwarded) error
	// FeedbackLoops name who besides <> may send complaints.
	FeedbackLoops []FeedbackLoop
	// Limits bound the listener (limit.go); the zero value limits nothing.
	Limits Limits
	Clock  clock.Clock // default clock.Real
	Logger *slog.Logger
}

// Stats counts what the listener accepted; cmd exports them as metrics.
type Stats struct {
	Recorded  atomic.Int64 // reports that recorded events
	Unknown   atomic.Int64 // for a message no longer known: nothing recorded
	Ignored   atomic.Int64 // understood as nothing to record (e.g. a DSN of relayed)
	Forwarded atomic.Int64
	Duplicate atomic.Int64 // the same report again: accepted, not recorded or forwarded again
	Limited   atomic.Int64 // recipients deferred (450) over a rate limit
}

// Recorder is the listener's submission.Inbound.
type Recorder struct {
	o     Options
	Stats Stats
	rates *rates
	dups  *seen
}

var _ submission.Inbound = (*Recorder)(nil)

// NewRecorder returns a Recorder; Store and Signer are required.
func NewRecorder(o Options) (*Recorder, error) {
	if o.Store == nil || o.Signer == nil {
		return nil, errors.New("returnpath: a store and a signer are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	return &Recorder{o: o, rates: newRates(o.Limits), dups: newSeen(o.Limits.DuplicateWindow)}, nil
}

var (
	errNotOurs = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Relaying denied: this server takes mail for its bounce domain only"}
	errForged  = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such mailbox"}
)

// Recipient refuses what is not a signed address of the bounce domain,
// postmaster@ or a feedback loop's fixed address.
func (r *Recorder) Recipient(to string) error {
	if r.postmaster(to) || r.feedbackLoop(to) != nil {
		return nil
	}
	_, err := r.o.Signer.Verify(to)
	switch {
	case errors.Is(err, verp.ErrOtherDomain):
		return errNotOurs
	case err != nil:
		return errForged
	}
	return nil
}

func (r *Recorder) postmaster(to string) bool {
	local, domain, _ := strings.Cut(to, "@")
	return strings.EqualFold(local, "postmaster") && strings.EqualFold(strings.TrimSuffix(domain, "."), r.o.Signer.Domain())
}

// deliver reads the report once and records it for each signed recipient
// of the transaction, then forwards it.
func (r *Recorder) deliver(from string, to []string, body []byte) error {
	rep, err := report.Parse(body)
	if err != nil {
		// Not a message at all: accepted (it was for a valid address),
		// nothing to record; counted so it can be noticed.
		r.o.Logger.Info("return path: unreadable report", "from", from, "err", err)
		r.Stats.Ignored.Add(1)
	}
	var evs []queue.Event
	var sps []queue.Suppression
	fwd := forwardSet{}
	for _, addr := range to {
		tag, ok := r.tagFor(addr, rep, from)
		if !ok {
			fwd.unattributed(r.feedbackLoop(addr))
			continue // postmaster@, or a feedback loop's report we cannot place
		}
		env, rcpt, ok, err := r.find(tag)
		if err != nil {
			return err
		}
		if !ok {
			r.o.Logger.Info("return path: report for a message no longer known; nothing recorded",
				"queue_id", tag.QueueID, "kind", rep.Kind.String(), "from", from)
			r.Stats.Unknown.Add(1)
			continue
		}
		fwd.add(env, rcpt, addr) // recorded or not: the sender may want it (a success DSN)
		ev, sp, ok := r.outcome(rep, from, env, rcpt)
		if !ok {
			r.o.Logger.Info("return path: nothing to record", "queue_id", env.ID, "kind", rep.Kind.String(), "from", from)
			r.Stats.Ignored.Add(1)
			continue
		}
		evs = append(evs, ev)
		if sp != nil {
			sp.Once = onceKey(tag)
			sps = append(sps, *sp)
		}
	}
	if len(evs) > 0 {
		made, err := r.o.Store.ReturnPath().Record(evs, sps)
		if err != nil {
			return err
		}
		if len(made) < len(sps) {
			r.o.Logger.Info("return path: a report for an address that already suppressed once; event recorded, nothing suppressed",
				"from", from, "suppressions", len(sps), "made", len(made))
		}
		r.Stats.Recorded.Add(1)
		for _, ev := range evs {
			r.o.Logger.Info("return path: recorded", "type", ev.Type, "queue_id", ev.QueueID, "recipient", ev.Recipient, "enhanced_code", ev.EnhancedCode)
		}
	}
	r.forward(from, fwd, body)
	return nil
}

// onceKey is what makes one VERP address suppress at most once: its
// message and recipient position.
func onceKey(tag verp.Tag) string { return "verp/" + tag.QueueID + "/" + strconv.Itoa(tag.Recipient) }

// find returns the message a tag names and its recipient's address.
func (r *Recorder) find(tag verp.Tag) (*queue.Envelope, string, bool, error) {
	env, ok, err := r.o.Store.History().Find(tag.QueueID)
	if err != nil || !ok {
		return nil, "", false, err
	}
	if tag.Recipient < 0 || tag.Recipient >= len(env.Recipients) {
		return nil, "", false, nil
	}
	return env, env.Recipients[tag.Recipient].Address, true, nil
}

// Count is Stats by the outcome names of the
// relayq_returnpath_reports_total metric.
func (r *Recorder) Count(outcome string) int64 {
	switch outcome {
	case "recorded":
		return r.Stats.Recorded.Load()
	case "unknown_message":
		return r.Stats.Unknown.Load()
	case "ignored":
		return r.Stats.Ignored.Load()
	case "forwarded":
		return r.Stats.Forwarded.Load()
	case "duplicate":
		return r.Stats.Duplicate.Load()
	case "rate_limited":
		return r.Stats.Limited.Load()
	}
	return 0
}
