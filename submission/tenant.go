package submission

import (
	"errors"
	"math"
	"net/mail"
	"strconv"
	"strings"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/queue"
)

// Tenants is the tenant directory as the Acceptor asks it (a
// *tenant.Directory is one). It is part of the Policy, so a reload
// replaces it with the rest.
type Tenants interface {
	// Of is the tenant a credential belongs to and the tenant's stream
	// default; "", "" for the default tenant.
	Of(c identity.Credential) (tenant, stream string)
	// MaySendAs reports whether tenant may send with a From: address at
	// domain.
	MaySendAs(tenant, domain string) bool
	// SignsWith reports whether tenant's mail may be signed with the DKIM
	// key of domain and selector.
	SignsWith(tenant, domain, selector string) bool
}

// KeyFilter says whether a message may be signed with the DKIM key of
// domain and selector (dkim.KeyFilter has its shape).
type KeyFilter func(domain, selector string) bool

// keyFilter is the filter of tenant's keys; nil (every key) without
// tenants.
func (a Acceptor) keyFilter(tenant string) KeyFilter {
	t := a.s.policy.Load().Tenants
	if t == nil {
		return nil
	}
	return func(domain, selector string) bool { return t.SignsWith(tenant, domain, selector) }
}

// tenantOf is the tenant of credential c and its stream default.
func (a Acceptor) tenantOf(c identity.Credential) (tenant, stream string) {
	if t := a.s.policy.Load().Tenants; t != nil {
		return t.Of(c)
	}
	return "", ""
}

// checkFrom refuses a message whose From: domains its tenant may not send
// as (550 5.7.1, HTTP 403), naming the domain. A From: field that names
// no domain (missing, unreadable) is checked as the domain "", which only
// a tenant without a domain list may use.
func (m *Incoming) checkFrom() error {
	t := m.a.s.policy.Load().Tenants
	if t == nil {
		return nil
	}
	tenant, _ := m.a.tenantOf(m.c.Credential)
	domains := fromDomains(m.hs.froms)
	if len(domains) == 0 {
		domains = []string{""}
	}
	for _, d := range domains {
		if t.MaySendAs(tenant, d) {
			continue
		}
		text := "From: domain " + d + " is not one tenant " + tenant + " may send as"
		if d == "" {
			text = "From: names no domain tenant " + tenant + " may send as"
		}
		return m.a.reject(m.c, RejectFromDomain, &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: text}, "tenant", tenant, "domain", d)
	}
	return nil
}

// fromDomains are the domains of every mailbox of the From: fields, lower
// case; an unreadable field gives "".
func fromDomains(froms []string) []string {
	var out []string
	for _, f := range froms {
		list, err := mail.ParseAddressList(f)
		if err != nil || len(list) == 0 {
			out = append(out, "")
			continue
		}
		for _, a := range list {
			d := ""
			if i := strings.LastIndexByte(a.Address, '@'); i >= 0 {
				d = a.Address[i+1:]
			}
			out = append(out, strings.ToLower(d))
		}
	}
	return out
}

// Quotas counts each tenant's messages against its quotas (a
// *tenant.Counter is one). Its counts survive a reload; the store keeps
// them with the messages (queue.Draft.CountIn).
type Quotas interface {
	// Admit counts one message of tenant submitted at now: when it is
	// counted (now, or the start of the first window with room when its
	// tenant holds mail over quota) and the counters it was added to; or
	// an error with an Until() time.Time method when it is refused.
	Admit(tenant string, now time.Time) (at time.Time, counters []string, err error)
	// Undo takes back the counts of a message that was not stored.
	Undo(counters []string)
}

// quotaRefusal is the error Quotas.Admit refuses with.
type quotaRefusal interface {
	error
	Until() time.Time
}

// retryText ends the text of a quota refusal: RetryAfter reads it.
const retryText = "; try again in "

// countQuota counts the message against its tenant's quotas: it sets the
// release of a message held for its window and the counters the draft
// stores, or refuses it (452 4.7.1, HTTP 429 with Retry-After).
func (m *Incoming) countQuota(env *queue.Envelope) error {
	q := m.a.s.opts.Quotas
	if q == nil || env.Sender.Tenant == "" {
		return nil
	}
	base := m.now
	if env.Release.After(base) {
		base = env.Release
	}
	at, counters, err := q.Admit(env.Sender.Tenant, base)
	var r quotaRefusal
	if errors.As(err, &r) {
		secs := int(math.Ceil(r.Until().Sub(m.now).Seconds()))
		text := "Tenant " + env.Sender.Tenant + ": " + r.Error() + retryText + strconv.Itoa(max(secs, 1)) + " s"
		return m.a.reject(m.c, RejectQuota, &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: text}, "tenant", env.Sender.Tenant)
	}
	if err != nil {
		m.a.s.log.Error("quota count failed", "tenant", env.Sender.Tenant, "err", err)
		return m.a.reject(m.c, RejectStorage, errQueueUnavailable)
	}
	if at.After(base) {
		env.Release = at // held: scheduled for when its window opens
	}
	m.counters = counters
	m.d.CountIn(counters...)
	return nil
}

// RetryAfter is how many seconds a quota refusal asks the client to wait;
// false for any other refusal.
func RetryAfter(e *smtp.SMTPError) (int, bool) {
	if e == nil {
		return 0, false
	}
	i := strings.LastIndex(e.Message, retryText)
	if e.Code != 452 || i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(e.Message[i+len(retryText):], " s"))
	return n, err == nil && n > 0
}

// undoQuota gives back the counts of a message that was not stored.
func (m *Incoming) undoQuota() {
	if m.counters != nil {
		m.a.s.opts.Quotas.Undo(m.counters)
		m.counters = nil
	}
}

// Pauses says which tenants are paused for their bounce or complaint rate
// (a *tenant.Monitor is one).
type Pauses interface {
	// Paused reports whether tenant is paused now, and why.
	Paused(tenant string) (reason string, paused bool)
}

// checkPaused refuses mail of a paused tenant with a temporary 451 4.7.1
// that says why: the client keeps it and retries, nothing is lost.
func (a Acceptor) checkPaused(c Client) error {
	p := a.s.opts.Pauses
	if p == nil {
		return nil
	}
	tenant, _ := a.tenantOf(c.Credential)
	if tenant == "" {
		return nil
	}
	reason, paused := p.Paused(tenant)
	if !paused {
		return nil
	}
	return a.reject(c, RejectPaused, &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1},
		Message: "Tenant " + tenant + " is paused: " + reason}, "tenant", tenant)
}
