package queue

import "time"

// Send later: a message may carry a release time (Envelope.Release), the
// hold of RFC 4865's FUTURERELEASE or the HTTP API's send_at. Draft.Commit
// stores it with every recipient StatusScheduled and due at the release,
// so the schedule index itself keeps it from delivery until then; the
// first Claim makes it StatusQueued. An operator's Retry of the message
// releases it at once (Release moves to then), a Delete cancels it; Flush,
// bulk retries and the end of a Hold leave the release as it is.

// Scheduled reports whether e waits for a release time after its arrival.
func (e *Envelope) Scheduled() bool { return e.Release.After(e.Created) }

// AgeStart is when the message's age starts to count for retry.max_age
// and warn_after: its release, else its arrival. Mail held for a week is
// not a week old at its first attempt.
func (e *Envelope) AgeStart() time.Time {
	if e.Scheduled() {
		return e.Release
	}
	return e.Created
}

// scheduleRecipients prepares a new message's recipients for Commit: a
// release after Created makes every one scheduled and due then (no first
// claim); one at or before it means now (RFC 4865 section 3: a time in
// the past is released at once), and Release is cleared.
func scheduleRecipients(env *Envelope) bool {
	if !env.Scheduled() {
		env.Release = time.Time{}
		return false
	}
	for i := range env.Recipients {
		r := &env.Recipients[i]
		r.Status, r.NextAttempt, r.Attempts, r.LastAttempt = StatusScheduled, env.Release, 0, time.Time{}
	}
	return true
}

// releaseNow releases a scheduled message at now (an operator's retry of
// it): its recipients are due then, and its age counts from then.
func releaseNow(env *Envelope, now time.Time) {
	if !env.Release.After(now) {
		return
	}
	env.Release = now
	for i := range env.Recipients {
		if r := &env.Recipients[i]; r.Status == StatusScheduled {
			r.NextAttempt = now
		}
	}
}

// scheduledEvents writes a recipient's scheduled event, its NextAttempt
// the release time.
func (w *writeTx) scheduledEvents(e *Envelope) error {
	for i := range e.Recipients {
		ev := recipientEvent(EventScheduled, e, &e.Recipients[i])
		ev.Attempt, ev.NextAttempt = 0, e.Release
		if err := w.pendingEvent(ev, e, i); err != nil {
			return err
		}
	}
	return nil
}
