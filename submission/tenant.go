package submission

import (
	"net/mail"
	"strings"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/identity"
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
