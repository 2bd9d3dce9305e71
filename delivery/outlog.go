package delivery

import (
	"log/slog"
	"time"

	"github.com/relayq/relayq/internal/logbuf"
	"github.com/relayq/relayq/queue"
)

// outcomeLog says what became of each recipient once its outcome is on
// disk: the log line per recipient per attempt, the Observer's counts and
// the attempt's TLS-RPT result (tlsrpt.go). It keeps no state: any
// goroutine may use it.
type outcomeLog struct {
	log    *slog.Logger
	obs    Observer
	tlsrpt TLSRecorder
	// tlsInStore: tlsrpt is the store that takes the outcomes, so an
	// attempt's TLS-RPT count goes into Record's transaction (tally; one
	// commit per attempt, not two).
	tlsInStore bool
}

// written logs and counts recorded outcomes. It runs only after the queue
// has them, so what the log and metrics say is what a restart would find.
func (l outcomeLog) written(j *job, outcomes []queue.Outcome, end time.Time, took time.Duration) {
	for i, o := range outcomes {
		l.line(j, o.Address, o.RemoteMTA, end, string(o.Status), o.Reply, o.NextAttempt)
		l.observeTLS(j, o, i == 0, end)
		if l.obs != nil {
			l.obs.Attempted(o.Status, took)
			if so, ok := l.obs.(SourceObserver); ok && j.source != nil {
				so.AttemptedFrom(j.source.Name, o.Status)
			}
		}
	}
}

// line writes the one line per recipient per attempt that lets
// `grep <queue ID>` tell a message's whole story.
func (l outcomeLog) line(j *job, rcpt, hop string, now time.Time, status, reply string, next time.Time) {
	args := []any{"id", j.id, "rcpt", rcpt, "hop", hop, "delay", now.Sub(j.env.Created).Round(time.Millisecond).String(), "status", status, "reply", reply}
	if !next.IsZero() {
		args = append(args, "next_attempt", next.Sub(now).Round(time.Millisecond).String())
	}
	args = tlsArgs(j, args)
	if j.source != nil {
		args = append(args, "source", j.source.Name) // the egress source the attempt went from
	}
	logbuf.Info(l.log, "delivery", args...)
}
