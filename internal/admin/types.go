package admin

import (
	"time"

	"github.com/relayq/relayq/queue"
)

// Message is one queued message as the API shows it: the envelope without
// the fields only the queue and DSN code need.
type Message struct {
	ID      string    `json:"id"`
	From    string    `json:"from"`
	Created time.Time `json:"created"`
	Size    int64     `json:"size"`
	Held    bool      `json:"held"`
	// Release is when a scheduled message (FUTURERELEASE, send_at) is
	// first attempted; absent for others.
	Release time.Time `json:"release,omitzero"`
	// Stream is the message's stream (see docs/streams.md).
	Stream string `json:"stream,omitempty"`
	// Tenant is the message's tenant ("" for the default; docs/tenants.md).
	Tenant     string      `json:"tenant,omitempty"`
	Recipients []Recipient `json:"recipients"`
	// Subject and MessageID are the message's header fields as stored
	// at acceptance; Client, Helo and AuthUser say who submitted it.
	Subject   string `json:"subject,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	Client    string `json:"client,omitempty"`
	Helo      string `json:"helo,omitempty"`
	AuthUser  string `json:"auth_user,omitempty"`
	// TLS says it was submitted over TLS; DKIM names the signatures
	// added at acceptance ("domain/selector", space-separated).
	TLS  bool   `json:"tls,omitempty"`
	DKIM string `json:"dkim,omitempty"`
}

// Recipient is one recipient's delivery state as the API shows it.
type Recipient struct {
	Address  string       `json:"address"`
	Status   queue.Status `json:"status"`
	Attempts int          `json:"attempts"`
	// NextAttempt is absent for delivered and bounced recipients.
	NextAttempt time.Time `json:"next_attempt,omitzero"`
	LastAttempt time.Time `json:"last_attempt,omitzero"`
	LastReply   string    `json:"last_reply,omitempty"`
	RemoteMTA   string    `json:"remote_mta,omitempty"`
	// Backoff, for a waiting recipient, says that its destination is
	// backed off (unreachable or 421) and why, as Postfix's mailq says
	// "delivery temporarily suspended".
	Backoff string `json:"backoff,omitempty"`
}

// Page is one page of GET /api/v1/queue. Next is the cursor to pass as
// "after" for the following page, "" when there is none.
type Page struct {
	Messages []Message `json:"messages"`
	Next     string    `json:"next"`
}

// FlushResult is the answer to POST /api/v1/queue/flush.
type FlushResult struct {
	// Flushed is how many messages were made due now.
	Flushed int `json:"flushed"`
}

// DeleteResult is the answer to DELETE /api/v1/queue/{id}.
type DeleteResult struct {
	Deleted string `json:"deleted"`
}

// errorBody is every error response.
type errorBody struct {
	Error string `json:"error"`
}

// MessageOf is the API form of a stored envelope (a finished message's
// too: its recipients' states are then final).
func MessageOf(env *queue.Envelope) Message { return messageFrom(env) }

// messageFrom converts a stored envelope to its API form.
func messageFrom(env *queue.Envelope) Message {
	m := Message{
		ID: env.ID, From: env.From, Created: env.Created, Size: env.Size, Held: env.Held, Release: env.Release, Stream: env.Sender.Stream, Tenant: env.Sender.Tenant,
		Subject: env.Subject, MessageID: env.MessageID, Client: env.ClientAddr, Helo: env.Helo, AuthUser: env.Sender.Credential.Name,
		TLS: env.TLS, DKIM: env.DKIM, Recipients: make([]Recipient, 0, len(env.Recipients)),
	}
	for _, r := range env.Recipients {
		rc := Recipient{
			Address: r.Address, Status: r.Status, Attempts: r.Attempts,
			LastAttempt: r.LastAttempt, LastReply: r.LastReply, RemoteMTA: r.RemoteMTA,
		}
		if !r.Status.Final() {
			rc.NextAttempt = r.NextAttempt
		}
		m.Recipients = append(m.Recipients, rc)
	}
	return m
}
