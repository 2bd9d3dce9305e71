package tenant

import (
	"sort"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/identity"
)

// Over is what happens to a message past a quota.
type Over uint8

const (
	// Refuse refuses it (SMTP 452 4.7.1, HTTP 429 with Retry-After).
	Refuse Over = iota
	// Hold accepts it and schedules it for when the window opens.
	Hold
)

// String is the config spelling: "refuse" or "hold".
func (o Over) String() string {
	if o == Hold {
		return "hold"
	}
	return "refuse"
}

// Quotas bound how many messages a tenant may submit per calendar
// minute, day and month (UTC); 0 is no bound.
type Quotas struct {
	PerMinute, PerDay, PerMonth int
	Over                        Over
}

// Scope is where a tenant's suppression entries apply.
type Scope uint8

const (
	// Global: the one list every tenant shares (the default).
	Global Scope = iota
	// Own: the tenant's own list; another tenant's bounces do not block it.
	Own
)

// String is the config spelling: "global" or "tenant".
func (s Scope) String() string {
	if s == Own {
		return "tenant"
	}
	return "global"
}

// Reputation are the thresholds of a tenant's rolling bounce and
// complaint rates. A rate is judged only over at least MinVolume
// messages sent in Window; a zero threshold is off.
type Reputation struct {
	Window                        time.Duration
	MinVolume                     int
	BounceWarn, BouncePause       float64
	ComplaintWarn, ComplaintPause float64
	// Resume is how long a pause lasts before it lifts by itself; 0 is
	// manual (an operator resumes).
	Resume time.Duration
}

// Key names one DKIM key of dkim.keys.
type Key struct{ Domain, Selector string }

// Tenant is one configured tenant.
type Tenant struct {
	Name string
	// APIKeys and Users are the names of submission.api_keys entries and
	// submission.users usernames that belong to it.
	APIKeys, Users []string
	// Domains are the From domains it may send as (lower case); empty
	// means any.
	Domains []string
	// SharedDomains allows another tenant to list the same domains (both
	// must say so).
	SharedDomains bool
	// Keys are the DKIM keys its mail is signed with; nothing else signs
	// it.
	Keys   []Key
	Quotas Quotas
	// Stream is the stream of its mail when the credential names none;
	// "" leaves it to the header and the default stream.
	Stream      string
	Suppression Scope
	Reputation  Reputation
}

// Directory answers who a credential is and what its tenant may do. The
// zero Directory (and nil) knows no tenant. It is read-only once built.
type Directory struct {
	byName map[string]*Tenant
	byCred map[identity.Credential]string
	names  []string
}

// New builds the directory of ts (config has checked them).
func New(ts []Tenant) *Directory {
	d := &Directory{byName: map[string]*Tenant{}, byCred: map[identity.Credential]string{}}
	for i := range ts {
		t := ts[i]
		d.byName[t.Name] = &t
		d.names = append(d.names, t.Name)
		for _, k := range t.APIKeys {
			d.byCred[identity.Credential{Kind: identity.APIKey, Name: k}] = t.Name
		}
		for _, u := range t.Users {
			d.byCred[identity.Credential{Kind: identity.User, Name: u}] = t.Name
		}
	}
	sort.Strings(d.names)
	return d
}

// Of is the tenant of credential c and its stream default: "", "" for the
// default tenant.
func (d *Directory) Of(c identity.Credential) (name, stream string) {
	if d == nil || len(d.byCred) == 0 {
		return "", ""
	}
	name = d.byCred[c]
	if t := d.byName[name]; t != nil {
		stream = t.Stream
	}
	return name, stream
}

// Get returns the tenant called name.
func (d *Directory) Get(name string) (Tenant, bool) {
	if d == nil {
		return Tenant{}, false
	}
	t, ok := d.byName[name]
	if !ok {
		return Tenant{}, false
	}
	return *t, true
}

// Names lists the configured tenants, sorted.
func (d *Directory) Names() []string {
	if d == nil {
		return nil
	}
	return d.names
}

// MaySendAs reports whether tenant may put domain in its From: field.
// The default tenant and a tenant without domains may send as any.
func (d *Directory) MaySendAs(tenant, domain string) bool {
	t, ok := d.Get(tenant)
	if !ok || len(t.Domains) == 0 {
		return true
	}
	domain = strings.ToLower(strings.TrimSuffix(domain, "."))
	for _, x := range t.Domains {
		if x == domain {
			return true
		}
	}
	return false
}

// SignsWith reports whether tenant's mail may be signed with the key of
// domain and selector: a tenant's own keys only; the default tenant's
// with every key no tenant owns.
func (d *Directory) SignsWith(tenant, domain, selector string) bool {
	k := Key{strings.ToLower(strings.TrimSuffix(domain, ".")), strings.ToLower(selector)}
	if t, ok := d.Get(tenant); ok {
		for _, x := range t.Keys {
			if x == k {
				return true
			}
		}
		return false
	}
	if d == nil {
		return true
	}
	for _, t := range d.byName {
		for _, x := range t.Keys {
			if x == k {
				return false
			}
		}
	}
	return true
}

// Scope is where tenant's suppression entries apply.
func (d *Directory) Scope(tenant string) Scope {
	t, _ := d.Get(tenant)
	return t.Suppression
}
