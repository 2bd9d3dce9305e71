package queue

import (
	"slices"
	"sync"
)

// The store remembers, in memory, which recipients an attempt is under way
// for: from the claim (Claim, UseFirstClaim) until the attempt's outcome is
// on disk (Record, RecordReporting) or the attempt is given up
// (EndAttempt). An operator's bounce (Bounce) leaves those recipients
// alone: an attempt in flight may yet end delivered, and a recipient must
// never be both delivered and bounced. Claim registers inside its own
// write, so a bounce's write, run by the same committer, sees every claim
// committed before it and no claim after it can take a recipient it
// bounced (Claim skips final recipients). UseFirstClaim writes nothing: it
// registers first and then checks the bounce floor (see fence), so either
// the bounce sees it registered or it sees the bounce and falls back to
// Claim. A registration that outlives its attempt only makes a bounce
// leave that recipient: the safe side.

// Attempt names one recipient of one message.
type Attempt struct {
	ID      string `json:"id"`
	Address string `json:"address"`
}

// claims is that memory: the recipients claimed and not yet recorded
// (delivery's doc.go calls them "claimed"). Its floor is the newest ID
// time when the last bounce began: a first claim of a message no newer
// than that must be made by Claim, which the committer orders after the
// bounce.
type claims struct {
	mu    sync.Mutex
	m     map[Attempt]struct{}
	floor int64
	ended chan struct{} // closed at the next end (AttemptsEnded)
}

// begin registers the attempt of message id for addrs and returns those it
// added (not registered before), for the caller to take back on failure.
func (f *claims) begin(id string, addrs []string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var added []string
	for _, a := range addrs {
		k := Attempt{ID: id, Address: a}
		if _, ok := f.m[k]; ok {
			continue
		}
		if f.m == nil {
			f.m = map[Attempt]struct{}{}
		}
		f.m[k] = struct{}{}
		added = append(added, a)
	}
	return added
}

// beginFirst registers a first attempt made on the claim of the message's
// commit, unless a bounce began after that commit (the floor): then it
// registers nothing and reports false.
func (f *claims) beginFirst(id string, addrs []string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.floor != 0 { // no bounce yet: no ID to read
		if n, ok := idTime(id); !ok || n <= f.floor {
			return false
		}
	}
	if f.m == nil {
		f.m = map[Attempt]struct{}{}
	}
	for _, a := range addrs {
		f.m[Attempt{ID: id, Address: a}] = struct{}{}
	}
	return true
}

// end forgets the attempt of message id for addrs and wakes AttemptsEnded's
// waiters if it forgot any.
func (f *claims) end(id string, addrs []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gone := false
	for _, a := range addrs {
		k := Attempt{ID: id, Address: a}
		if _, ok := f.m[k]; ok {
			delete(f.m, k)
			gone = true
		}
	}
	if gone && f.ended != nil {
		close(f.ended)
		f.ended = nil
	}
}

// has reports whether an attempt is in flight for a.
func (f *claims) has(a Attempt) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.m[a]
	return ok
}

// fence raises the floor to n (the newest ID time): it only raises.
func (f *claims) fence(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.floor = max(f.floor, n)
}

// changed returns a channel closed at the next end.
func (f *claims) changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended == nil {
		f.ended = make(chan struct{})
	}
	return f.ended
}

// BeginAttempt registers as in flight, inside a write as Claim does but
// claiming nothing, the non-final recipients of message id named in
// addrs, and returns the message as stored then: for a job that records
// outcomes without an attempt (recipients past max_age), so that an
// operator's bounce either leaves them or is seen in what it returns, and
// no recipient gets both reports. The caller ends it as any attempt.
func (s *Store) BeginAttempt(id string, addrs []string) (*Envelope, error) {
	var env *Envelope
	var mine []string
	err := s.submit(func(w *writeTx) error {
		var err error
		if env, err = w.load(id); err != nil {
			return err
		}
		var these []string
		for _, r := range env.Recipients {
			if !r.Status.Final() && slices.Contains(addrs, r.Address) {
				these = append(these, r.Address)
			}
		}
		mine = append(mine, w.s.attempts.begin(id, these)...)
		return nil
	})
	if err != nil {
		s.attempts.end(id, mine)
		return nil, err
	}
	return env, nil
}

// EndAttempt tells the store that the attempt of message id for addrs is
// over without an outcome written by Record (abandoned at shutdown, or its
// outcome could not be written and never will be). Record and
// RecordReporting end the attempts of their outcomes themselves.
func (s *Store) EndAttempt(id string, addrs []string) { s.attempts.end(id, addrs) }

// AttemptsEnded returns a channel closed when the next attempt ends. Take
// it before asking InFlight, then wait on it: no end is missed.
func (s *Store) AttemptsEnded() <-chan struct{} { return s.attempts.changed() }

// InFlight reports how many of as have an attempt under way.
func (s *Store) InFlight(as []Attempt) int {
	n := 0
	for _, a := range as {
		if s.attempts.has(a) {
			n++
		}
	}
	return n
}
