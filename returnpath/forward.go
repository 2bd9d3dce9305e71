package returnpath

import (
	"context"
	"errors"
	"fmt"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue"
)

// Forwarder queues forwarded reports (bounces.forward) as relayq's own
// mail: a notice from <> with the report attached (notice). A report is
// outsider content that only claims its From:, so it does not enter by
// the submission path: no client is authenticated for it, no DKIM key
// signs it (the application's would vouch for whatever anyone sends to a
// VERP address), and none of its header fields (Idempotency-Key,
// X-Relayq-Stream) is read.
type Forwarder struct {
	Store *queue.Store
	// Hostname names relayq in the notice (From: MAILER-DAEMON@Hostname,
	// its Message-ID).
	Hostname string
	// Stream is the stream the notices are queued in.
	Stream string
	Clock  clock.Clock
	// BeforeCommit and OnQueued are the delivery engine's hooks, as for
	// submitted mail (submission.Options); either may be nil.
	BeforeCommit, OnQueued func(*queue.Envelope)
	// Draining, if set, reports whether the queue takes no new mail
	// (relayq queue drain); the notice is then not queued.
	Draining func() bool
}

var errNotTaking = errors.New("the queue takes no new mail (draining or low on disk space)")

// Forward queues f's notice; it returns once the notice is fsync'd.
func (w *Forwarder) Forward(ctx context.Context, f Forwarded) error {
	if (w.Draining != nil && w.Draining()) || w.Store.Low() {
		return errNotTaking
	}
	now := w.Clock.Now()
	d := w.Store.NewDraft()
	msg := notice(f, w.Hostname, d.ID(), now)
	if _, err := d.Write(msg); err != nil {
		d.Abort()
		return err
	}
	if err := ctx.Err(); err != nil {
		d.Abort()
		return err
	}
	env := queue.Envelope{
		Recipients: []queue.Recipient{{Address: f.To}},
		SMTPUTF8:   !isASCII(f.To + f.From),
		Created:    now,
		MessageID:  "<" + d.ID() + ".report@" + oneLine(w.Hostname) + ">",
		Subject:    "Report received about your message" + aboutWhom(f.About),
		Sender:     identity.Sender{Stream: w.Stream},
	}
	if w.BeforeCommit != nil {
		w.BeforeCommit(&env)
	}
	if err := d.Commit(env); err != nil {
		return fmt.Errorf("queueing the notice: %w", err)
	}
	env = d.Committed()
	if w.OnQueued != nil {
		w.OnQueued(&env)
	}
	return nil
}

// forwardSet is what one report is forwarded as: per recipient of the
// notice (an original sender, or a feedback loop's forward_to), the
// messages and recipients it concerns, or the loop address it came to.
type forwardSet map[string]*forwardTo

type forwardTo struct {
	about []About
	loop  string
}

func (s forwardSet) add(env *queue.Envelope, rcpt, verpAddr string) {
	if env.From == "" {
		return // mail from <> (a report of relayq's own) has no one to tell
	}
	f := s[env.From]
	if f == nil {
		f = &forwardTo{}
		s[env.From] = f
	}
	f.about = append(f.about, About{VERP: verpAddr, QueueID: env.ID, MessageID: env.MessageID, Recipient: rcpt})
}

// unattributed adds a report to fl's fixed address that names no message
// of ours, for fl's ForwardTo; nil (postmaster@) adds nothing.
func (s forwardSet) unattributed(fl *FeedbackLoop) {
	if fl != nil && fl.ForwardTo != "" && s[fl.ForwardTo] == nil {
		s[fl.ForwardTo] = &forwardTo{loop: fl.Address}
	}
}

// forward hands the report to Options.Forward once per original sender. A
// failure is logged, never refused: what could be recorded was.
func (r *Recorder) forward(from string, s forwardSet, body []byte) {
	if r.o.Forward == nil {
		return
	}
	for to, f := range s {
		if err := r.o.Forward(context.Background(), Forwarded{To: to, From: from, Report: body, About: f.about, Loop: f.loop}); err != nil {
			r.o.Logger.Warn("return path: forwarding the report to the original sender failed", "to", to, "err", err)
			continue
		}
		r.Stats.Forwarded.Add(1)
	}
}
