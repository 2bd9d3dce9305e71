package returnpath

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"sync"
	"time"
)

// Deliver takes one report (submission.Inbound). A report a VERP address
// already received within Limits.DuplicateWindow, byte for byte after the
// listener's own trace field (a retry after a lost 250, or a bomb of
// copies), is accepted again (250) but recorded and forwarded only the
// first time; the rest goes to deliver.
func (r *Recorder) Deliver(from string, to []string, body []byte) error {
	verps := r.verpOnly(to)
	fresh, claimed := r.dups.claim(verps, sha256.Sum256(afterTrace(body)), r.o.Clock.Now())
	if len(verps) > 0 && len(fresh) == 0 {
		r.Stats.Duplicate.Add(1)
		r.o.Logger.Info("return path: the same report again; accepted, not recorded or forwarded again", "from", from, "to", strings.Join(to, ","))
		return nil
	}
	keep := append(fresh, r.postmasters(to)...)
	if err := r.deliver(from, keep, body); err != nil {
		r.dups.release(claimed)
		return err
	}
	return nil
}

// verpOnly is to without postmaster@ (which records nothing and is never
// remembered).
func (r *Recorder) verpOnly(to []string) []string {
	var out []string
	for _, a := range to {
		if !r.postmaster(a) {
			out = append(out, a)
		}
	}
	return out
}

func (r *Recorder) postmasters(to []string) []string {
	var out []string
	for _, a := range to {
		if r.postmaster(a) {
			out = append(out, a)
		}
	}
	return out
}

// afterTrace is body without its first header field, the Received field
// the listener wrote (different at each arrival).
func afterTrace(body []byte) []byte {
	for i := bytes.Index(body, []byte("\r\n")); i >= 0; {
		if i+2 >= len(body) || (body[i+2] != ' ' && body[i+2] != '\t') {
			return body[min(i+2, len(body)):]
		}
		j := bytes.Index(body[i+2:], []byte("\r\n"))
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return body
}

// seen remembers the reports each VERP address received, by digest, for
// window, in arrival order (so the oldest are forgotten first), at most
// maxTracked of them.
type seen struct {
	mu     sync.Mutex
	window time.Duration
	at     map[seenKey]time.Time
	order  []seenEntry
}

type seenKey struct {
	addr string
	sum  [sha256.Size]byte
}

type seenEntry struct {
	key seenKey
	at  time.Time
}

func newSeen(window time.Duration) *seen {
	return &seen{window: window, at: map[seenKey]time.Time{}}
}

// claim returns the addresses of to that have not received report sum
// within the window, and marks them as having received it now; claimed
// is what release undoes. With no window every address is fresh and
// nothing is remembered.
func (s *seen) claim(to []string, sum [sha256.Size]byte, now time.Time) (fresh []string, claimed []seenKey) {
	if s.window <= 0 {
		return to, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	for _, a := range to {
		k := seenKey{addr: strings.ToLower(a), sum: sum}
		if _, dup := s.at[k]; dup {
			continue
		}
		s.at[k] = now
		s.order = append(s.order, seenEntry{k, now})
		fresh, claimed = append(fresh, a), append(claimed, k)
	}
	return fresh, claimed
}

// release forgets keys claimed for a report that was then not accepted
// (its 451 makes the sender retry, and the retry must count).
func (s *seen) release(keys []seenKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		delete(s.at, k)
	}
}

// expire forgets entries older than the window and the oldest beyond
// maxTracked.
func (s *seen) expire(now time.Time) {
	n := 0
	for n < len(s.order) && (now.Sub(s.order[n].at) >= s.window || len(s.order)-n > maxTracked) {
		if t, ok := s.at[s.order[n].key]; ok && t.Equal(s.order[n].at) {
			delete(s.at, s.order[n].key)
		}
		n++
	}
	clear(s.order[:n])
	s.order = s.order[n:] // append reallocates to the live entries only
}
