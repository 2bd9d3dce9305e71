package suppression

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/smtpcodes"
)

// Entry is one suppressed address.
type Entry = queue.Suppression

// Store keeps the list; queue.Suppressions (the store's list) is one.
type Store interface {
	Get(addr string) (Entry, bool, error)
	Add(entries ...Entry) error
	Remove(addr string) (bool, error)
	List() ([]Entry, error)
}

// Key is the form an address is listed under (queue.SuppressionKey).
func Key(addr string) string { return queue.SuppressionKey(addr) }

// Config is the suppression section of the configuration.
type Config struct {
	// Auto adds recipients whose bounce says they do not exist (default on).
	Auto bool
	// Expire drops an entry this long after it was added; 0 keeps it.
	Expire time.Duration
	// DomainExpire drops an entry that a 5.1.2 bounce added (bad
	// destination domain) this long after it was added, when shorter than
	// Expire; 0 leaves it to Expire.
	DomainExpire time.Duration
	// Codes are further enhanced status codes ("5.7.1") whose bounces add
	// the recipient, for providers that reject unknown users that way.
	Codes []string
	// ExemptAuthenticated and ExemptTrusted let SASL-authenticated clients
	// and trusted networks send to suppressed addresses anyway.
	ExemptAuthenticated bool
	ExemptTrusted       bool
	// ComplaintExpire replaces Expire for entries a complaint added
	// (queue.SourceComplaint); 0 keeps them: a person asked to be left
	// alone, which no amount of time undoes (bounces.complaint_expire).
	ComplaintExpire time.Duration
	// TenantScoped are the tenants with a list of their own (tenants[].
	// suppression: tenant); every other sender's entries are global
	// (scope.go).
	TenantScoped []string
}

// List is the suppression list as relayq uses it. A nil Clock is clock.Real.
// Config may be set before use; SetConfig changes it while in use (SIGHUP).
type List struct {
	Store  Store
	Config Config
	Clock  clock.Clock

	mu sync.RWMutex
}

// SetConfig replaces the configuration, safely while the list is in use.
func (l *List) SetConfig(c Config) {
	l.mu.Lock()
	l.Config = c
	l.mu.Unlock()
}

func (l *List) config() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.Config
}

func (l *List) now() time.Time {
	if l.Clock == nil {
		return clock.Real.Now()
	}
	return l.Clock.Now()
}

func (l *List) live(e Entry) bool {
	c := l.config()
	exp := c.Expire
	if e.Source == queue.SourceComplaint {
		exp = c.ComplaintExpire
	} else if d := c.DomainExpire; d > 0 && (exp <= 0 || d < exp) && badDomain(e) {
		exp = d
	}
	return exp <= 0 || l.now().Before(e.Since.Add(exp))
}

// badDomain reports whether a bounce added e with status 5.1.2: the
// domain, not the mailbox, was refused ("550 5.1.2 ..." from a server,
// "5.1.2 delivery: ... NXDOMAIN" from relayq's own lookup). An operator's
// entry (source api or import) is never so bounded: its Reply is a note.
func badDomain(e Entry) bool {
	if e.Source != SourceAuto {
		return false
	}
	f := strings.Fields(e.Reply)
	if len(f) > 0 && f[0] == "5.1.2" {
		return true
	}
	return len(f) > 1 && len(f[0]) == 3 && f[1] == "5.1.2"
}

// SourceAuto marks an entry that a bounce added.
const SourceAuto = "auto"

// Lookup returns addr's live entry.
func (l *List) Lookup(addr string) (Entry, bool, error) {
	e, ok, err := l.Store.Get(addr)
	if err != nil || !ok || !l.live(e) {
		return Entry{}, false, err
	}
	return e, true, nil
}

// Check says whether mail to addr from sender, a client so authenticated
// and trusted, is refused (by the global list or sender's scope's), and
// the entry that refuses it. A store error lets the mail through (logged
// by the caller): mail is never lost to the list.
func (l *List) Check(sender identity.Sender, addr string, authenticated, trusted bool) (Entry, bool, error) {
	c := l.config()
	if (authenticated && c.ExemptAuthenticated) || (trusted && c.ExemptTrusted) {
		return Entry{}, false, nil
	}
	return l.LookupIn(l.ScopeOf(sender), addr)
}

// Auto says whether a bounce with reply r puts its recipient on the list.
func (l *List) Auto(r smtpcodes.Reply) bool {
	if r.Class != smtpcodes.Permanent {
		return false
	}
	return l.AutoStatus(r.Enhanced)
}

// AutoStatus is Auto for a bounce known only by its enhanced status
// ("5.1.1"), as an asynchronous one (a DSN's Status field) is.
func (l *List) AutoStatus(enhanced string) bool {
	c := l.config()
	if !c.Auto || !strings.HasPrefix(enhanced, "5.") {
		return false
	}
	return strings.HasPrefix(enhanced, "5.1.") || slices.Contains(c.Codes, enhanced)
}

// Entries lists the live entries.
func (l *List) Entries() ([]Entry, error) {
	all, err := l.Store.List()
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(e Entry) bool { return !l.live(e) }), nil
}

// Refusal is the RCPT reply text after "550 5.1.1 " for a suppressed
// address: "<addr>: suppressed since DATE after: REPLY".
func Refusal(addr string, e Entry) string {
	s := fmt.Sprintf("<%s>: suppressed since %s", addr, e.Since.UTC().Format(time.RFC3339))
	if e.Reply != "" {
		s += " after: " + e.Reply
	}
	return s
}

// Refuse is Check with the refusal text, for submission.Options.Suppressions.
func (l *List) Refuse(sender identity.Sender, addr string, authenticated, trusted bool) (string, bool, error) {
	e, ok, err := l.Check(sender, addr, authenticated, trusted)
	if err != nil || !ok {
		return "", false, err
	}
	return Refusal(addr, e), true, nil
}
