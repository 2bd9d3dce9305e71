package delivery

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/relayq/relayq/delivery/dsn"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtpcodes"
)

// bounceNotices builds the one RFC 3464 "failed" report for the recipients
// of env that failed in this attempt, addressed to the sender from <>. A
// message with a null sender is itself a report and never gets one (RFC 5321
// section 4.5.5): that is what stops bounce loops.
func (e *Engine) bounceNotices(env *queue.Envelope, failed []queue.Recipient, now time.Time) []queue.Notice {
	var rs []dsn.Recipient
	for _, r := range failed {
		if !notifies(r.Notify, "FAILURE") {
			continue
		}
		rs = append(rs, dsnRecipient(r, "failed", now, time.Time{}))
	}
	return e.notice(env, rs, now, env.RET == "FULL", "bounce")
}

// delayNotices builds the one "delayed" warning for recipients still
// deferred after warn_after, so mail is never stuck silently.
func (e *Engine) delayNotices(env *queue.Envelope, delayed []queue.Recipient, now time.Time, set *Settings) []queue.Notice {
	var until time.Time
	if set.Policy.MaxAge > 0 {
		until = env.Created.Add(set.Policy.MaxAge)
	}
	var rs []dsn.Recipient
	for _, r := range delayed {
		rs = append(rs, dsnRecipient(r, "delayed", now, until))
	}
	return e.notice(env, rs, now, false, "delay warning")
}

func dsnRecipient(r queue.Recipient, action string, now, until time.Time) dsn.Recipient {
	status := "5.0.0"
	if action == "delayed" {
		status = "4.0.0"
	}
	if s, ok := smtpcodes.StatusOf(r.LastReply); ok {
		status = s
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

func (e *Engine) notice(env *queue.Envelope, rs []dsn.Recipient, now time.Time, full bool, kind string) []queue.Notice {
	if len(rs) == 0 {
		return nil
	}
	if env.From == "" {
		e.log.Info("not sending a "+kind+" for a message from the null sender", "id", env.ID, "recipients", len(rs))
		return nil
	}
	r := dsn.Report{
		ReportingMTA: e.hostname,
		From:         "Mail Delivery System <MAILER-DAEMON@" + e.hostname + ">",
		To:           env.From,
		EnvID:        env.EnvID,
		Arrival:      env.Created,
		Date:         now,
		MessageID:    fmt.Sprintf("%s.%d.dsn@%s", env.ID, now.UnixNano(), e.hostname),
		Boundary:     fmt.Sprintf("=_%s.%x", env.ID, now.UnixNano()),
		QueueID:      env.ID,
		Recipients:   rs,
		ReturnFull:   full,
	}
	var original io.Reader // nil: no original part when the body is unreadable
	if body, err := e.store.Body(env.ID); err == nil {
		defer body.Close()
		original = body
	} else {
		e.log.Warn("original message unreadable for the report", "id", env.ID, "err", err)
	}
	var buf bytes.Buffer
	if err := dsn.Write(&buf, r, original); err != nil {
		e.log.Error("building a "+kind+" failed", "id", env.ID, "err", err)
		return nil
	}
	body := buf.Bytes()
	if e.sign != nil {
		// A report must not be lost to a signing problem: it goes unsigned.
		if signed, err := e.sign(body); err != nil {
			e.log.Error("signing a "+kind+" failed, sending it unsigned", "id", env.ID, "err", err)
		} else {
			body = signed
		}
	}
	id := e.store.NewID()
	e.log.Info("sending a "+kind, "id", env.ID, "bounce_id", id, "to", env.From, "recipients", len(rs))
	return []queue.Notice{{
		Envelope: queue.Envelope{ID: id, MessageID: "<" + r.MessageID + ">", From: "", Recipients: []queue.Recipient{{Address: env.From}}},
		Body:     body,
	}}
}
