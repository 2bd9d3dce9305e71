package smtpclient

import (
	"sync"
	"time"
)

// FallbackTTL is how long a hop whose TLS handshake failed under
// opportunistic TLS is reached without STARTTLS: long enough that its mail
// goes out instead of waiting for its operator to fix TLS (RFC 7435: a
// failed opportunistic handshake falls back to cleartext), short enough
// that a repaired server gets TLS again within the hour.
const FallbackTTL = time.Hour

// maxFallbackHops bounds the hops remembered at once. When full, expired
// entries go first, then the one nearest its end.
const maxFallbackHops = 4096

// fallbacks remembers the hops to reach without STARTTLS until a time,
// by dial address. It is safe for concurrent use.
type fallbacks struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// note remembers addr until now+FallbackTTL.
func (f *fallbacks) note(addr string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.until == nil {
		f.until = map[string]time.Time{}
	}
	if _, known := f.until[addr]; !known && len(f.until) >= maxFallbackHops {
		f.evict(now)
	}
	f.until[addr] = now.Add(FallbackTTL)
}

// evict makes room for one entry: it drops every expired entry, or when
// none has expired the one that would expire first.
func (f *fallbacks) evict(now time.Time) {
	oldest, first := "", time.Time{}
	for a, t := range f.until {
		if !now.Before(t) {
			delete(f.until, a)
			continue
		}
		if oldest == "" || t.Before(first) {
			oldest, first = a, t
		}
	}
	if len(f.until) >= maxFallbackHops {
		delete(f.until, oldest)
	}
}

// active reports whether addr is to be reached without STARTTLS at now,
// forgetting it once its time is over.
func (f *fallbacks) active(addr string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.until[addr]
	if ok && !now.Before(t) {
		delete(f.until, addr)
		return false
	}
	return ok
}

// len is how many hops are remembered, expired or not.
func (f *fallbacks) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.until)
}
