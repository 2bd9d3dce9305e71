package queue

import (
	"time"

	"github.com/relayq/relayq/internal/identity"
)

// Status is the delivery state of one recipient. Every recipient is in
// exactly one state at a time.
type Status string

const (
	// StatusQueued: accepted, not yet attempted.
	StatusQueued Status = "queued"
	// StatusDeferred: at least one transient failure; waiting for NextAttempt.
	StatusDeferred Status = "deferred"
	// StatusDelivered: the next hop accepted the message (2xx after DATA). Final.
	StatusDelivered Status = "delivered"
	// StatusBounced: failed permanently or gave up retrying. Final.
	StatusBounced Status = "bounced"
	// StatusScheduled: accepted with a release time (Envelope.Release:
	// FUTURERELEASE, send_at), not attempted before it; queued from its
	// first attempt on.
	StatusScheduled Status = "scheduled"
	// StatusDeleted is only in the history: an operator deleted the
	// message while this recipient was still waiting.
	StatusDeleted Status = "deleted"
)

// Final reports whether no further attempt will ever be made in this state.
func (s Status) Final() bool { return s == StatusDelivered || s == StatusBounced }

// Recipient is one envelope recipient with its own delivery state.
type Recipient struct {
	Address string `json:"address"`
	// ORCPT is the RFC 3461 ORCPT parameter as given ("rfc822;user@example"), or "".
	ORCPT string `json:"orcpt,omitempty"`
	// Notify is the RFC 3461 NOTIFY list (NEVER, SUCCESS, FAILURE, DELAY); empty means the default (FAILURE, DELAY).
	Notify []string `json:"notify,omitempty"`

	Status      Status    `json:"status"`
	Attempts    int       `json:"attempts"`
	NextAttempt time.Time `json:"next_attempt,omitzero"`
	LastAttempt time.Time `json:"last_attempt,omitzero"`
	// LastReply is the last reply or error seen, as "451 4.7.1 text".
	LastReply string `json:"last_reply,omitempty"`
	// RemoteMTA is the next hop that gave LastReply.
	RemoteMTA string `json:"remote_mta,omitempty"`
	// Warned is set once a "delayed" DSN has been sent for this recipient.
	Warned bool `json:"warned,omitempty"`
	// Report marks a report (DSN) this recipient's outcome called for that
	// is not queued yet: another attempt of the message was in flight, and
	// the one that finishes last reports for all (Store.QueueGroupedDSN). Files
	// written before it have none.
	Report Report `json:"report,omitempty"`
}

// Report is the kind of a pending report: the RFC 3464 Action it will give.
type Report string

const (
	// ReportNone: nothing pending.
	ReportNone Report = ""
	// ReportFailed: a "failed" report is owed (the recipient bounced).
	ReportFailed Report = "failed"
	// ReportDelayed: a "delayed" warning is owed (the recipient is still
	// deferred after warn_after).
	ReportDelayed Report = "delayed"
)

// Valid reports whether r is one of the kinds above.
func (r Report) Valid() bool { return r == ReportNone || r == ReportFailed || r == ReportDelayed }

// Envelope is everything the queue knows about a message except its body.
type Envelope struct {
	ID string `json:"id"`
	// From is the reverse path; "" is the null sender (bounces), which never gets a DSN.
	From       string      `json:"from"`
	Recipients []Recipient `json:"recipients"`
	// RET is the RFC 3461 RET parameter: "FULL", "HDRS" or "".
	RET string `json:"ret,omitempty"`
	// EnvID is the RFC 3461 ENVID parameter.
	EnvID string `json:"envid,omitempty"`
	// SMTPUTF8 and Body record what the client declared at MAIL: the
	// SMTPUTF8 parameter (RFC 6531) and BODY= (RFC 6152), "7BIT",
	// "8BITMIME" or "" when not given.
	SMTPUTF8 bool   `json:"smtputf8,omitempty"`
	Body     string `json:"body,omitempty"`
	// Sender is who submitted the message (not its From): tenant, stream
	// and credential, resolved once at acceptance. The stream decides how
	// the scheduler shares each scope between streams by weight. Its JSON
	// form replaces the flat auth_user and stream of older JSON records,
	// which are still read (legacyjson.go).
	Sender identity.Sender `json:"sender,omitzero"`
	// TLS says the client submitted it over TLS (STARTTLS, implicit TLS
	// or HTTPS).
	TLS bool `json:"tls,omitempty"`
	// DKIM names the signatures added at acceptance, "domain/selector"
	// each, space-separated; "" for none.
	DKIM string `json:"dkim,omitempty"`
	// ClientAddr is the submitting client's IP address.
	ClientAddr string `json:"client_addr,omitempty"`
	// Helo is the name the client gave at HELO/EHLO.
	Helo string `json:"helo,omitempty"`
	// Created is when the message was accepted (the 250).
	Created time.Time `json:"created"`
	// Size is the length of the stored body in bytes (trace header and
	// Prefix included).
	Size int64 `json:"size"`
	// Prefix is header fields that go in front of the stored body whenever
	// it is read: the DKIM-Signature, known only once the body has streamed
	// in. Body and BodyOf return Prefix, then the stored bytes.
	Prefix string `json:"prefix,omitempty"`
	// Held messages are never attempted until released.
	Held bool `json:"held,omitempty"`
	// Release is when a message the client asked to hold (RFC 4865
	// FUTURERELEASE, send_at) may first be attempted; zero for none. Its
	// age (retry.max_age, warn_after) counts from then (AgeStart).
	Release time.Time `json:"release,omitzero"`
	// MessageID and Subject are the message's header fields, as the
	// client sent them (or as added at acceptance), for events and history.
	MessageID string `json:"message_id,omitempty"`
	Subject   string `json:"subject,omitempty"`
	// Events is the sequence number of the message's first event in the
	// events tree, its queued (then scheduled) events, one per recipient,
	// when they were written in the pending form (eventpending.go); 0 for
	// none. The message's finish points them at its history record.
	Events uint64 `json:"events,omitempty"`
}

// Done reports whether every recipient is in a final state.
func (e *Envelope) Done() bool {
	for _, r := range e.Recipients {
		if !r.Status.Final() {
			return false
		}
	}
	return true
}

// Marked reports whether a recipient still waits for a report (Report
// set). Such a message stays stored, even with every recipient final,
// until Store.QueueGroupedDSN queues it.
func (e *Envelope) Marked() bool {
	for _, r := range e.Recipients {
		if r.Report != ReportNone {
			return true
		}
	}
	return false
}

// Outcome is the result of one attempt for one recipient, as recorded by Store.Record.
type Outcome struct {
	Address string
	// Status is StatusDelivered, StatusDeferred or StatusBounced.
	Status Status
	// Reply is the remote reply or synthesized error, "550 5.1.1 text".
	Reply     string
	RemoteMTA string
	// NextAttempt is required for StatusDeferred: when to try again.
	NextAttempt time.Time
	// Warned marks that a delay DSN was generated for this recipient now.
	Warned bool
	// Expired marks a bounce that gave up retrying (max_age or
	// max_attempts) rather than a permanent refusal: its event is "expired".
	Expired bool
	// Suppress puts the recipient on the suppression list (with Reply) in
	// the same transaction: the bounce said the address does not exist.
	Suppress bool
	// TLS is the TLS version of the session that gave Reply ("TLSv1.3"),
	// "none" for plain text, "" when no session was reached.
	TLS string
	// TLSRPT, when set, is counted for TLS-RPT in the same transaction
	// (once per attempt: the caller sets it on one outcome), so an attempt
	// costs one commit, not a second for its count (see RecordTLS).
	TLSRPT *TLSTally
	// Uncounted gives back the attempt Claim counted (a deferral that
	// was not the recipient's: its source address was block-listed and
	// the mail moves to another source).
	Uncounted bool
	// Report, when set, marks the recipient as owed this report instead of
	// the caller queueing it with the outcome: a later Store.QueueGroupedDSN queues
	// one report for every mark of the message. ReportFailed goes with a
	// bounce, ReportDelayed with a deferral.
	Report Report
}

// Notice is a message generated by relayq itself (a DSN) that is enqueued
// in the same transaction as the outcomes that caused it, so that a crash
// can neither lose it nor send it twice.
type Notice struct {
	// Envelope.ID is assigned by the store unless set (from NewID);
	// Recipients start StatusQueued.
	Envelope Envelope
	Body     []byte
}
