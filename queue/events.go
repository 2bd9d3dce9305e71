package queue

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	bolt "go.etcd.io/bbolt"
)

// Events is the store's event log: what happened to each recipient, in
// order, for the admin API and the webhooks, with the webhooks' durable
// cursors into it.
type Events struct{ s *Store }

// Events returns the store's event log.
func (s *Store) Events() Events { return Events{s} }

// EventType names what happened to one recipient (or, for EventDSNSent, the
// report relayq generated about it).
type EventType string

const (
	EventQueued     EventType = "queued"
	EventDelivered  EventType = "delivered"
	EventDeferred   EventType = "deferred"
	EventBounced    EventType = "bounced"
	EventExpired    EventType = "expired"
	EventDelayed    EventType = "delayed"
	EventSuppressed EventType = "suppressed"
	EventDSNSent    EventType = "dsn_sent"
	// EventScheduled: accepted with a release time (its NextAttempt).
	EventScheduled EventType = "scheduled"
	// EventComplained: a feedback report (RFC 5965) about a delivered
	// message came back to its VERP address.
	EventComplained EventType = "complained"
	// EventAutoReplied: an automatic response (RFC 3834) came back.
	EventAutoReplied EventType = "auto_replied"
	// EventDeleted, EventHeld and EventReleased are an operator's actions on
	// a recipient still waiting (By is ByOperator): a webhook consumer's
	// last word on a deleted message is then deleted, not deferred.
	EventDeleted  EventType = "deleted"
	EventHeld     EventType = "held"
	EventReleased EventType = "released"
	// EventUnsubscribed: the recipient used a one-click unsubscribe link
	// relayq wrote (RFC 8058); it is then suppressed for the sender.
	EventUnsubscribed EventType = "unsubscribed"
	// EventTenantState: a tenant's reputation state changed (Tenant names
	// it; Reply says "paused: complaint rate ...", "warn: ..." or
	// "active: ..."). It belongs to no message. It is a wide type
	// (eventcodec.go).
	EventTenantState EventType = "tenant_state"
)

// EventTypes lists every type, in the order the documentation gives them.
// A type's index is its code in event records: append, never reorder.
var EventTypes = []EventType{EventQueued, EventDelivered, EventDeferred, EventBounced,
	EventExpired, EventDelayed, EventSuppressed, EventDSNSent, EventScheduled, EventComplained, EventAutoReplied,
	EventDeleted, EventHeld, EventReleased, EventUnsubscribed, EventTenantState}

// ByOperator is Event.By for what an operator did (admin API, CLI) rather
// than a delivery attempt.
const ByOperator = "operator"

// Valid reports whether t is one of EventTypes.
func (t EventType) Valid() bool { return slices.Contains(EventTypes, t) }

// Event is one durable record of a recipient outcome. It is written in the
// same transaction as the outcome itself, so the stream and the queue never
// disagree after a crash. ID is assigned by the store: 16 hex digits of a
// per-file sequence, so lexical order is commit order.
type Event struct {
	ID            string    `json:"event_id"`
	Type          EventType `json:"type"`
	Time          time.Time `json:"-"`
	QueueID       string    `json:"queue_id,omitempty"`
	MessageID     string    `json:"message_id,omitempty"`
	From          string    `json:"from,omitempty"`
	Recipient     string    `json:"recipient,omitempty"`
	Attempt       int       `json:"attempt,omitempty"`
	Reply         string    `json:"reply,omitempty"`
	EnhancedCode  string    `json:"enhanced_code,omitempty"`
	RemoteMTA     string    `json:"remote_mta,omitempty"`
	TLS           string    `json:"tls,omitempty"`
	NextAttempt   time.Time `json:"-"`
	BounceQueueID string    `json:"bounce_queue_id,omitempty"`
	// Async marks an outcome reported by mail after the next hop's 250
	// (a bounce, delay warning, success DSN, complaint or auto-reply to the VERP
	// address), not seen in the SMTP conversation.
	Async bool `json:"async,omitempty"`
	// FeedbackType is a complaint's RFC 5965 Feedback-Type (abuse, fraud, ...).
	FeedbackType string `json:"feedback_type,omitempty"`
	// By is ByOperator for an operator's action, "" for the relay's own.
	By string `json:"by,omitempty"`
	// Stream is the message's stream ("" for events written before
	// streams, and for suppressed, which has no message).
	Stream string `json:"stream,omitempty"`
	// Tenant is the message's tenant ("" for the default tenant, and for
	// events written before tenants); for suppressed, the submitter's.
	Tenant string `json:"tenant,omitempty"`
}

// eventWire is Event's wire form for UnmarshalJSON: the same fields, with
// the times as RFC 3339 with milliseconds (AppendJSON writes it).
type eventWire struct {
	*eventFields
	Time        string `json:"time,omitempty"`
	NextAttempt string `json:"next_attempt,omitempty"`
}

// eventFields is Event without its methods, so eventWire's encoding does
// not recurse.
type eventFields Event

const eventTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// MarshalJSON writes the documented event fields, empty ones omitted.
func (e Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(nil), nil
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (e *Event) UnmarshalJSON(b []byte) error {
	w := eventWire{eventFields: (*eventFields)(e)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	var err error
	e.Time, e.NextAttempt = time.Time{}, time.Time{}
	if w.Time != "" {
		if e.Time, err = time.Parse(time.RFC3339Nano, w.Time); err != nil {
			return fmt.Errorf("event time: %w", err)
		}
	}
	if w.NextAttempt != "" {
		if e.NextAttempt, err = time.Parse(time.RFC3339Nano, w.NextAttempt); err != nil {
			return fmt.Errorf("event next_attempt: %w", err)
		}
	}
	return nil
}

// bucketEvents holds the stream: 8-byte big-endian sequence -> the record
// of eventcodec.go.
var bucketEvents = []byte("events")

// enhancedCode extracts "x.y.z" from a reply such as "550 5.1.1 text".
// It looks at the first two whitespace-separated fields without
// allocating: the committer calls it for every event it stores.
func enhancedCode(reply string) string {
	rest := reply
	for range 2 {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			return ""
		}
		end := strings.IndexFunc(rest, unicode.IsSpace)
		if end < 0 {
			end = len(rest)
		}
		s := rest[:end]
		rest = rest[end:]
		if strings.Count(s, ".") == 2 && len(s) >= 5 && (s[0] == '2' || s[0] == '4' || s[0] == '5') {
			return s
		}
	}
	return ""
}

// EventKey turns an event ID into its key, false if it is not one.
func EventKey(id string) ([]byte, bool) {
	if len(id) != 16 {
		return nil, false
	}
	k, err := hex.DecodeString(id)
	if err != nil {
		return nil, false
	}
	return k, true
}

// event appends ev to the stream in this transaction, giving it its ID and
// (if unset) the time.
func (w *writeTx) event(ev Event) error {
	b, err := w.eventsBucket()
	if err != nil {
		return err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return fmt.Errorf("queue: event sequence: %w", err)
	}
	// The key is the event ID (EventKey); the record does not repeat it.
	key := w.record(func(a []byte) []byte { return binary.BigEndian.AppendUint64(a, seq) })
	h, share := w.shared[ev.QueueID]
	if ev.Time.IsZero() {
		ev.Time = w.s.now()
		if share {
			ev.Time = h.finished
		}
	}
	share = share && h.seq <= seq && !ev.Time.After(h.finished) && ev.Tenant == h.env.Sender.Tenant
	if ev.EnhancedCode == "" {
		ev.EnhancedCode = enhancedCode(ev.Reply)
	}
	rec := w.record(func(a []byte) []byte {
		var r []byte
		if r, err = appendEvent(a, &ev); err != nil {
			return a
		}
		if share && r[len(a)] == eventFormat {
			// The same record, sharing its message's fields with the
			// history record this write put before it (a wide type's
			// record is never shared: its code does not fit).
			r = appendSharedEvent(r[:len(a)], &ev, h, seq, r[len(a)+5])
		}
		return r
	})
	if err != nil {
		return err
	}
	if err := b.Put(key, rec); err != nil {
		return fmt.Errorf("queue: store event: %w", err)
	}
	w.events++
	return nil
}

// recipientEvent builds the event of one recipient of env.
// operatorEvents records an operator's action t on every recipient of env
// still waiting, in this transaction.
func (w *writeTx) operatorEvents(t EventType, env *Envelope) error {
	for i := range env.Recipients {
		r := &env.Recipients[i]
		if r.Status.Final() {
			continue
		}
		ev := recipientEvent(t, env, r)
		ev.By = ByOperator
		if err := w.event(ev); err != nil {
			return err
		}
	}
	return nil
}

func recipientEvent(t EventType, env *Envelope, r *Recipient) Event {
	return Event{Type: t, QueueID: env.ID, MessageID: env.MessageID, From: env.From,
		Recipient: r.Address, Attempt: r.Attempts, Stream: env.Sender.Stream, Tenant: env.Sender.Tenant}
}

// EventQuery selects events: those after the cursor After (an event ID, ""
// for the start), of the given types (none: all), at most Limit (default
// 100, at most 10000); with Tenant set, only that tenant's (a tenant's
// webhook, a tenant's API key).
type EventQuery struct {
	After  string
	Types  []EventType
	Limit  int
	Tenant *TenantFilter
}

// TenantFilter selects one tenant's events; Name "" is the default
// tenant's.
type TenantFilter struct{ Name string }

// List returns the events matching q, in order, and the ID of the last
// one examined (the cursor to continue from, even when all were filtered
// out).
func (ev Events) List(q EventQuery) (evs []Event, last string, err error) {
	s := ev.s
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 10000)
	var start []byte
	if q.After != "" {
		k, ok := EventKey(q.After)
		if !ok {
			return nil, "", fmt.Errorf("queue: event cursor %q: not an event ID", q.After)
		}
		start = k
	}
	last = q.After
	const maxScan = 100000 // bounds one read transaction when filtering
	err = s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEvents)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		l := historyLookup{b: b, dict: s.dictOf(tx), envs: tx.Bucket(bucketEnvelopes)}
		var k, v []byte
		if start == nil {
			k, v = c.First()
		} else if k, v = c.Seek(start); k != nil && string(k) == string(start) {
			k, v = c.Next()
		}
		for n := 0; k != nil && len(evs) < limit && n < maxScan; k, v = c.Next() {
			n++
			if len(k) != 8 {
				continue // a finished message (eventshared.go)
			}
			last = hex.EncodeToString(k)
			ev, err := decodeStored(k, v, &l)
			ev.ID = last
			if err != nil {
				s.opts.Logger.Warn("queue: skipping a damaged event", "event_id", last, "err", err)
				continue
			}
			if (len(q.Types) == 0 || slices.Contains(q.Types, ev.Type)) && (q.Tenant == nil || q.Tenant.Name == ev.Tenant) {
				evs = append(evs, ev)
			}
		}
		return nil
	})
	return evs, last, err
}

// LastID is the ID of the newest event, "" when there is none.
func (ev Events) LastID() (string, error) {
	s := ev.s
	var id string
	err := s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketEvents); b != nil {
			if k := lastEventKey(b.Cursor()); k != nil {
				id = hex.EncodeToString(k)
			}
		}
		return nil
	})
	return id, err
}

// Backlog is how many events follow the cursor id, in O(log n): IDs
// are a gapless sequence except where Prune removed the oldest, so it is
// the distance from the cursor (or the oldest kept event) to the newest.
func (ev Events) Backlog(id string) (int, error) {
	s := ev.s
	var cursor uint64
	if id != "" {
		k, ok := EventKey(id)
		if !ok {
			return 0, fmt.Errorf("queue: event cursor %q: not an event ID", id)
		}
		cursor = binary.BigEndian.Uint64(k)
	}
	n := 0
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEvents)
		if b == nil {
			return nil
		}
		first, last := firstEventKey(b.Cursor()), lastEventKey(b.Cursor())
		if len(first) != 8 || len(last) != 8 {
			return nil
		}
		from := max(cursor, binary.BigEndian.Uint64(first)-1)
		if to := binary.BigEndian.Uint64(last); to > from {
			n = int(min(to-from, 1<<31))
		}
		return nil
	})
	return n, err
}

// firstEventKey and lastEventKey are the keys of the oldest and newest
// event, past the finished messages the tree also holds.
func firstEventKey(c *bolt.Cursor) []byte {
	k, _ := c.First()
	for k != nil && len(k) != 8 {
		k, _ = c.Next()
	}
	return k
}

func lastEventKey(c *bolt.Cursor) []byte {
	k, _ := c.Last()
	for k != nil && len(k) != 8 {
		k, _ = c.Prev()
	}
	return k
}

// decodeStored reads the event stored under k, in either format.
func decodeStored(k, v []byte, l *historyLookup) (Event, error) {
	if len(v) > 0 && v[0] == eventShared {
		return decodeSharedEvent(v, binary.BigEndian.Uint64(k), l)
	}
	if len(v) > 0 && v[0] == eventPending {
		return decodePendingEvent(v, binary.BigEndian.Uint64(k), l)
	}
	return decodeEvent(v)
}

// Add appends events that belong to no queued message (a recipient
// refused because it is suppressed), durably, in one transaction.
func (ev Events) Add(evs ...Event) error {
	s := ev.s
	return s.submit(func(w *writeTx) error {
		for _, ev := range evs {
			if err := w.event(ev); err != nil {
				return err
			}
		}
		return nil
	})
}

// Changed returns a channel that is closed at the next commit that
// adds events. Take it before reading, then wait on it: no event is missed.
func (ev Events) Changed() <-chan struct{} {
	s := ev.s
	s.evMu.Lock()
	defer s.evMu.Unlock()
	if s.evCh == nil {
		s.evCh = make(chan struct{})
	}
	return s.evCh
}

// eventsCommitted wakes every waiter of Events().Changed.
func (s *Store) eventsCommitted() {
	s.evMu.Lock()
	if s.evCh != nil {
		close(s.evCh)
		s.evCh = nil
	}
	s.evMu.Unlock()
}
