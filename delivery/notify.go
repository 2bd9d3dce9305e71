package delivery

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/relayq/relayq/delivery/dsn"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtpcodes"
)

// dsnWriter builds the RFC 3464 reports relayq sends itself (from <>, by
// hostname, signed by sign when set) and queues those owed for marks
// (group.go). It keeps no state: any goroutine may use it.
type dsnWriter struct {
	store    Store
	clock    clock.Clock
	log      *slog.Logger
	hostname string
	sign     func([]byte) ([]byte, error)
}

// forVerdict builds the one "failed" report and the one "delayed" warning
// v calls for.
func (w dsnWriter) forVerdict(set *Settings, env *queue.Envelope, v verdict, now time.Time) []queue.Notice {
	var notices []queue.Notice
	notices = append(notices, w.bounce(env, v.failed, now)...)
	notices = append(notices, w.delayed(env, v.delayed, now, set)...)
	return notices
}

// bounce builds the one RFC 3464 "failed" report for the recipients
// of env that failed in this attempt, addressed to the sender from <>. A
// message with a null sender is itself a report and never gets one (RFC 5321
// section 4.5.5): that is what stops bounce loops.
func (w dsnWriter) bounce(env *queue.Envelope, failed []queue.Recipient, now time.Time) []queue.Notice {
	var rs []dsn.Recipient
	for _, r := range failed {
		if !notifies(r.Notify, "FAILURE") {
			continue
		}
		rs = append(rs, dsnRecipient(r, "failed", now, time.Time{}))
	}
	return w.build(env, rs, now, env.RET == "FULL", "bounce")
}

// relayed builds the "relayed" report for recipients delivered, with
// NOTIFY=SUCCESS, to a next hop that does not offer DSN: RFC 3461 section
// 5.2.2.1 makes the relaying MTA say so, since no success report will
// come from further on. Like the failure report, it carries the headers
// only. It is not grouped with the other jobs of the pass (group.go).
func (w dsnWriter) relayed(env *queue.Envelope, relayed []queue.Recipient, now time.Time) []queue.Notice {
	var rs []dsn.Recipient
	for _, r := range relayed {
		rs = append(rs, dsnRecipient(r, dsn.ActionRelayed, now, time.Time{}))
	}
	return w.build(env, rs, now, false, "relay report")
}

// delayed builds the one "delayed" warning for recipients still
// deferred after warn_after, so mail is never stuck silently.
func (w dsnWriter) delayed(env *queue.Envelope, delayed []queue.Recipient, now time.Time, set *Settings) []queue.Notice {
	var until time.Time
	if set.Policy.MaxAge > 0 {
		until = env.AgeStart().Add(set.Policy.MaxAge)
	}
	var rs []dsn.Recipient
	for _, r := range delayed {
		rs = append(rs, dsnRecipient(r, "delayed", now, until))
	}
	return w.build(env, rs, now, false, "delay warning")
}

func dsnRecipient(r queue.Recipient, action string, now, until time.Time) dsn.Recipient {
	status := "5.0.0"
	if action == "delayed" {
		status = "4.0.0"
	}
	if s, ok := smtpcodes.StatusOf(r.LastReply); ok {
		status = s
	}
	if action == "delayed" && strings.HasPrefix(status, "5.") {
		// Still being retried (a 552 at RCPT, a 5xx at the greeting): RFC
		// 3463 section 3.1 and RFC 3464 section 2.3.3 want 4.x.x for a
		// delay, though the Diagnostic-Code quotes the server's 5.x.x.
		status = "4." + status[2:]
	}
	// Remote-MTA names the host that reported the status (RFC 3464
	// section 2.3.5): only when the last reply is one a server sent. For
	// relayq's own decisions (5.6.7, 5.3.4, a connection that failed, an
	// expiry before any server answered) it is left out, though the
	// recipient remembers the host it tried.
	remote := ""
	if reply, err := smtpcodes.ParseReply(r.LastReply); err == nil && reply.Remote() {
		remote = r.RemoteMTA
	}
	return dsn.Recipient{
		Final: r.Address, Original: r.ORCPT, Action: action, Status: status,
		RemoteMTA: remote, Diagnostic: r.LastReply, LastAttempt: now, WillRetryUntil: until,
	}
}

// build writes one report of kind (for the log) naming rs, with the
// original message when full.
func (w dsnWriter) build(env *queue.Envelope, rs []dsn.Recipient, now time.Time, full bool, kind string) []queue.Notice {
	if len(rs) == 0 {
		return nil
	}
	if env.From == "" {
		w.log.Info("not sending a "+kind+" for a message from the null sender", "id", env.ID, "recipients", len(rs))
		return nil
	}
	r := dsn.Report{
		ReportingMTA: w.hostname,
		From:         "Mail Delivery System <MAILER-DAEMON@" + w.hostname + ">",
		To:           env.From,
		EnvID:        env.EnvID,
		Arrival:      env.Created,
		Date:         now,
		MessageID:    fmt.Sprintf("%s.%d.dsn@%s", env.ID, now.UnixNano(), w.hostname),
		Boundary:     fmt.Sprintf("=_%s.%x", env.ID, now.UnixNano()),
		QueueID:      env.ID,
		Recipients:   rs,
		ReturnFull:   full,
		SMTPUTF8:     env.SMTPUTF8,
	}
	var original io.Reader // nil: no original part when the body is unreadable
	if body, err := w.store.Body(env.ID); err == nil {
		defer body.Close()
		original = body
	} else {
		w.log.Warn("original message unreadable for the report", "id", env.ID, "err", err)
	}
	var buf bytes.Buffer
	if err := dsn.Write(&buf, r, original); err != nil {
		w.log.Error("building a "+kind+" failed", "id", env.ID, "err", err)
		return nil
	}
	body := buf.Bytes()
	if w.sign != nil {
		// A report must not be lost to a signing problem: it goes unsigned.
		if signed, err := w.sign(body); err != nil {
			w.log.Error("signing a "+kind+" failed, sending it unsigned", "id", env.ID, "err", err)
		} else {
			body = signed
		}
	}
	id := w.store.NewID()
	w.log.Info("sending a "+kind, "id", env.ID, "bounce_id", id, "to", env.From, "recipients", len(rs))
	return []queue.Notice{{
		Envelope: queue.Envelope{ID: id, MessageID: "<" + r.MessageID + ">", From: "", Recipients: []queue.Recipient{{Address: env.From}}},
		Body:     body,
	}}
}

// errMarksMoving: the marks of a message kept changing under queueMarked.
var errMarksMoving = errors.New("delivery: pending reports changed while being reported")

// queueMarked queues one "failed" report and one "delayed" warning for
// every pending mark of message id, and reports whether it queued any. A
// message gone (deleted by an operator) has nothing left to report. When
// the caller knows the message (env, as its job claimed it) and the
// marked recipients as they were recorded (left), the first try reads
// nothing; should the marks have moved, it reads them.
func (w dsnWriter) queueMarked(set *Settings, id string, env *queue.Envelope, left []queue.Recipient) (bool, error) {
	for range 3 {
		if env == nil {
			var err error
			if env, left, err = w.readMarked(id); env == nil || err != nil {
				return false, err
			}
		}
		v, marks := verdict{}.withLeft(env, left)
		notices := w.forVerdict(set, env, v, w.clock.Now())
		done, err := w.store.QueueGroupedDSN(id, marks, notices...)
		if errors.Is(err, queue.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if done {
			return len(notices) > 0, nil
		}
		// Another reporter cleared some of these marks first: read again.
		env = nil
	}
	return false, errMarksMoving
}

// readMarked reads message id and its marked recipients; nil when it is
// gone or has none.
func (w dsnWriter) readMarked(id string) (*queue.Envelope, []queue.Recipient, error) {
	env, err := w.store.Get(id)
	if errors.Is(err, queue.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var left []queue.Recipient
	for _, r := range env.Recipients {
		if r.Report != queue.ReportNone {
			left = append(left, r)
		}
	}
	if len(left) == 0 {
		return nil, nil, nil
	}
	return env, left, nil
}
