package queue

import (
	"slices"
	"time"
)

// A claim is an attempt recorded before it is made: Attempts+1,
// LastAttempt = the attempt's start, NextAttempt = when to retry if the
// attempt never reports back. A message gets its claims two ways:
//
//   - ClaimFirst, on the envelope about to be committed: the first attempt
//     is recorded in the very write that queues the message, and the
//     attempt that starts right after the 250 uses it (UseFirstClaim)
//     without a write of its own.
//   - Store.Claim, in its own fsync'd write, for every other attempt.
//
// FirstClaimed is the one definition of "carries the claim made at
// acceptance, not used yet"; Draft.Commit, Postpone and UseFirstClaim all
// ask it. Both ways return what they claimed (Claimed), so nobody
// re-derives it from the recipients' times.

// Claimed is what a claim recorded: the message as it now stands and the
// addresses whose attempt was claimed (recipients not named, final or not
// yet due are left out).
type Claimed struct {
	*Envelope
	Addrs []string
}

// ClaimFirst records the first attempt of a message about to be committed
// (Created set, nothing tried yet): every recipient gets Attempts 1,
// LastAttempt = Created and NextAttempt = retryAt. Draft.Commit keeps such
// a claim. A zero Created leaves env unchanged: the claim must be dated;
// so does a release time (Scheduled): the first attempt waits for it.
func (e *Envelope) ClaimFirst(retryAt time.Time) {
	if e.Created.IsZero() || e.Scheduled() {
		return
	}
	for i := range e.Recipients {
		r := &e.Recipients[i]
		r.Attempts, r.LastAttempt, r.NextAttempt = 1, e.Created, retryAt
	}
}

// FirstClaimed reports whether r, a recipient of e, carries the claim
// ClaimFirst made and no attempt has used it yet (no reply recorded).
func (e *Envelope) FirstClaimed(r Recipient) bool {
	return r.Attempts == 1 && r.LastAttempt.Equal(e.Created) && r.LastReply == "" && !r.Status.Final()
}

// UseFirstClaim returns the claim made at acceptance for the recipients of
// env named in addrs, so the first attempt may start without a write. It
// does so only when every named non-final recipient carries that claim,
// the claim still protects them at now (their retry time is ahead) and the
// store still has env as it is (not held, deleted or rescheduled since),
// and no operator's bounce began since its commit (inflight.go).
// Otherwise it returns a Claimed with no addresses, and the caller Claims.
//
// The last condition costs no read while no operator's change or park
// (see intervene) can have touched env since it was committed: the usual
// first attempt, right after the 250, then reads nothing at all.
func (s *Store) UseFirstClaim(env *Envelope, addrs []string, now time.Time) Claimed {
	if s.broken.Load() != nil || s.fenceErr() != nil {
		return Claimed{} // Claim writes, and says why it cannot
	}
	var out []string
	for _, r := range env.Recipients {
		if !slices.Contains(addrs, r.Address) || r.Status.Final() {
			continue
		}
		if !env.FirstClaimed(r) || !now.Before(r.NextAttempt) {
			return Claimed{}
		}
		out = append(out, r.Address)
	}
	if len(out) == 0 {
		return Claimed{}
	}
	if !s.attempts.beginFirst(env.ID, out) {
		return Claimed{} // an operator's bounce began since its commit: Claim reads
	}
	if s.mayHaveIntervened(env.ID) {
		if ok, err := s.scheduled(env); err != nil || !ok {
			s.attempts.end(env.ID, out)
			return Claimed{} // Claim will say what happened (held, deleted, ...)
		}
	}
	return Claimed{Envelope: env, Addrs: out}
}

// Between its commit and its first attempt, a message changes only by an
// operator (hold, release, retry, delete, flush, bulk), a park (Postpone),
// or quarantine; Claim, Record and Report of its other jobs leave the
// claims of its other recipients alone. Each of those writes raises
// Store.intervened to the newest ID issued so far, inside the write,
// before its commit. IDs are issued in strictly increasing order before
// their message can be stored, so a message whose ID is newer than that
// floor has not been touched by any of them: its committed envelope is
// still the stored one as far as its first claim goes.

// intervene raises the floor above which a message is certainly untouched
// since its commit (see UseFirstClaim). It may run twice: it only raises.
func (w *writeTx) intervene() {
	n := w.s.ids.newest()
	for {
		cur := w.s.intervened.Load()
		if n <= cur || w.s.intervened.CompareAndSwap(cur, n) {
			return
		}
	}
}

// mayHaveIntervened reports whether a write that raises the floor may have
// touched message id since it was committed (see intervene).
func (s *Store) mayHaveIntervened(id string) bool {
	n, ok := idTime(id)
	return !ok || n <= s.intervened.Load()
}
