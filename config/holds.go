package config

import "time"

// maxReleaseInterval is the largest max-future-release-interval RFC 4865
// section 3 lets EHLO advertise: at most 9 digits of seconds.
const maxReleaseInterval = 999999999 * time.Second

// validateHolds checks idempotency_window and max_hold: neither may be
// negative (0 turns each off), and max_hold must fit FUTURERELEASE's
// advertisement.
func (l *loader) validateHolds(s *Submission) {
	if s.IdempotencyWindow < 0 {
		l.failf("submission.idempotency_window", "%v must not be negative (0 turns idempotency keys off)", s.IdempotencyWindow)
	}
	switch {
	case s.MaxHold < 0:
		l.failf("submission.max_hold", "%v must not be negative (0 accepts no hold)", s.MaxHold)
	case s.MaxHold > maxReleaseInterval:
		l.failf("submission.max_hold", "%v is more than FUTURERELEASE can advertise (999999999s, RFC 4865 section 3)", s.MaxHold)
	case s.MaxHold%time.Second != 0:
		l.failf("submission.max_hold", "%v must be whole seconds (RFC 4865 counts in seconds)", s.MaxHold)
	}
}
