package smtpclient

import (
	"sync"
	"time"
)

// Connection reuse: after a clean transaction the session stays open for
// the next message to the same hop, as Postfix's connection cache does. A
// busy destination then costs one TCP and TLS handshake, greeting and EHLO
// per connection rather than per message (RFC 5321 section 3.3 allows any
// number of transactions in one session).
const (
	// idleTimeout closes a cached connection nobody has used for this long;
	// servers drop idle clients themselves, and a short cache is enough to
	// carry a burst (Postfix uses 2s).
	idleTimeout = 2 * time.Second
	// maxUses bounds the messages sent over one connection unless the
	// hop says otherwise (Hop.MaxUses).
	maxUses = 100
	// maxIdlePerHop bounds the idle connections kept per hop.
	maxIdlePerHop = 32
)

// connPool holds idle sessions by hop (and source: poolKey).
type connPool struct {
	mu     sync.Mutex
	idle   map[string][]*session
	closed bool
}

func poolKey(h Hop) string {
	k := h.Addr()
	if h.Smarthost {
		k += "|smarthost"
	}
	if h.ImplicitTLS {
		k += "|tls"
	}
	if h.TLS != nil {
		k += "|" + string(h.TLS.Policy)
	}
	if h.Source != nil {
		k += "|from=" + h.Source.Name
	}
	return k
}

// take returns an idle session for key, detached from any attempt, or nil.
func (p *connPool) take(key string) *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.idle[key]
	if len(list) == 0 {
		return nil
	}
	s := list[len(list)-1]
	p.idle[key] = list[:len(list)-1]
	s.idleTimer.Stop()
	return s
}

// put keeps s for reuse, or closes it (and then releases its hold) when
// the pool is full or closed.
func (p *connPool) put(key string, s *session) {
	p.mu.Lock()
	limit := s.hop.MaxUses
	if limit <= 0 {
		limit = maxUses
	}
	if p.closed || s.uses >= limit || len(p.idle[key]) >= maxIdlePerHop {
		p.mu.Unlock()
		s.quit()
		s.release()
		return
	}
	if p.idle == nil {
		p.idle = map[string][]*session{}
	}
	p.idle[key] = append(p.idle[key], s)
	s.idleTimer = time.AfterFunc(idleTimeout, func() { p.expire(key, s) })
	p.mu.Unlock()
}

// expire closes s if it is still idle in the pool.
func (p *connPool) expire(key string, s *session) {
	p.mu.Lock()
	list := p.idle[key]
	found := false
	for i, x := range list {
		if x == s {
			p.idle[key] = append(list[:i], list[i+1:]...)
			found = true
			break
		}
	}
	if len(p.idle[key]) == 0 {
		delete(p.idle, key)
	}
	p.mu.Unlock()
	if found {
		s.quit()
		s.release()
	}
}

// closeIdle takes out of the pool one idle session whose hold match
// accepts and closes it in the background, releasing the hold once the
// connection is closed. It reports whether there was one.
func (p *connPool) closeIdle(match func(Hold) bool) bool {
	victim := p.takeMatch(match)
	if victim == nil {
		return false
	}
	go func() {
		victim.quit()
		victim.release()
	}()
	return true
}

// takeMatch takes out of the pool one idle session whose hold match
// accepts, or returns nil.
func (p *connPool) takeMatch(match func(Hold) bool) *session {
	p.mu.Lock()
	var victim *session
	for key, list := range p.idle {
		for i, s := range list {
			if s.hold != nil && match(s.hold) {
				victim = s
				p.idle[key] = append(list[:i:i], list[i+1:]...)
				if len(p.idle[key]) == 0 {
					delete(p.idle, key)
				}
				break
			}
		}
		if victim != nil {
			break
		}
	}
	p.mu.Unlock()
	if victim != nil {
		victim.idleTimer.Stop()
	}
	return victim
}

// close quits every idle session and refuses new ones.
func (p *connPool) close() {
	p.mu.Lock()
	p.closed = true
	var all []*session
	for _, list := range p.idle {
		for _, s := range list {
			s.idleTimer.Stop()
			all = append(all, s)
		}
	}
	p.idle = nil
	p.mu.Unlock()
	for _, s := range all {
		s.quit()
		s.release()
	}
}
