package queue

// outcomeEvents are the events of one recorded outcome: its own (delivered,
// deferred, bounced or expired) and, when the delay notice went out with
// it, a delayed event.
func outcomeEvents(env *Envelope, r *Recipient, o Outcome) []Event {
	t := EventDeferred
	switch {
	case o.Status == StatusDelivered:
		t = EventDelivered
	case o.Status == StatusBounced && o.Expired:
		t = EventExpired
	case o.Status == StatusBounced:
		t = EventBounced
	}
	ev := recipientEvent(t, env, r)
	ev.Reply, ev.RemoteMTA, ev.TLS = o.Reply, o.RemoteMTA, o.TLS
	if t == EventDeferred {
		ev.NextAttempt = o.NextAttempt
	}
	evs := []Event{ev}
	if o.Warned {
		d := recipientEvent(EventDelayed, env, r)
		d.Reply, d.RemoteMTA, d.NextAttempt = o.Reply, o.RemoteMTA, o.NextAttempt
		evs = append(evs, d)
	}
	return evs
}

// noticeEvent is the dsn_sent event of a report relayq queued about env.
func noticeEvent(env, notice *Envelope) Event {
	ev := Event{Type: EventDSNSent, QueueID: env.ID, MessageID: env.MessageID, From: env.From, Stream: env.Sender.Stream, Tenant: env.Sender.Tenant,
		BounceQueueID: notice.ID}
	if len(notice.Recipients) > 0 {
		ev.Recipient = notice.Recipients[0].Address
	}
	return ev
}
