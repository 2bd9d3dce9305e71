package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/relayq/relayq/internal/tenant"
)

// validateTenants checks the tenants against each other and the rest of
// the configuration: names unique, each credential and DKIM key in at
// most one tenant and configured, each From domain in one tenant unless
// every tenant listing it says shared_domains, streams listed. A tenant
// without dkim_keys gets the keys of dkim.keys whose domain it lists.
func (l *loader) validateTenants(c *Config) {
	names, keys, users, dkimKeys := map[string]bool{}, map[string]string{}, map[string]string{}, map[tenant.Key]string{}
	domains := map[string][]int{}
	for i := range c.Tenants {
		t := &c.Tenants[i]
		at := fmt.Sprintf("[%d]", i)
		switch {
		case !streamName.MatchString(t.Name):
			l.failAt("tenants", at+".name", "%q is not a tenant name (1-32 lower-case letters, digits, '-' or '_')", t.Name)
		case names[t.Name]:
			l.failAt("tenants", at+".name", "tenant %q is listed twice", t.Name)
		}
		names[t.Name] = true
		l.tenantCreds(at+".api_keys", t.Name, t.APIKeys, keys, func(n string) bool {
			return slices.ContainsFunc(c.Submission.APIKeys, func(k APIKey) bool { return k.Name == n })
		}, "submission.api_keys")
		l.tenantCreds(at+".users", t.Name, t.Users, users, func(n string) bool {
			return slices.ContainsFunc(c.Submission.Users, func(u User) bool { return u.Username == n })
		}, "submission.users")
		for _, d := range t.Domains {
			domains[d] = append(domains[d], i)
		}
		if t.Stream != "" && !slices.ContainsFunc(c.Streams, func(s Stream) bool { return s.Name == t.Stream }) {
			l.failAt("tenants", at+".stream", "tenant %q names stream %q, which streams does not list", t.Name, t.Stream)
		}
		l.tenantKeys(c, t, at, dkimKeys)
		r := t.Reputation
		if r.BounceWarn > 0 && r.BouncePause > 0 && r.BounceWarn > r.BouncePause || r.ComplaintWarn > 0 && r.ComplaintPause > 0 && r.ComplaintWarn > r.ComplaintPause {
			l.failAt("tenants", at+".reputation", "a warn threshold is above its pause threshold")
		}
	}
	for _, d := range sortedKeys(domains) {
		if ix := domains[d]; len(ix) > 1 && !allShared(c.Tenants, ix) {
			l.failAt("tenants", fmt.Sprintf("[%d].domains", ix[1]), "domain %q is also tenant %q's; set shared_domains: true in both to allow it", d, c.Tenants[ix[0]].Name)
		}
	}
	for i, w := range c.Events.Webhooks {
		if w.Tenant != "" && !names[w.Tenant] {
			l.failAt("events.webhooks", fmt.Sprintf("[%d].tenant", i), "%q is not a tenant listed under tenants", w.Tenant)
		}
	}
}

// tenantCreds checks one tenant's credential names: configured, and in
// no other tenant.
func (l *loader) tenantCreds(at, name string, list []string, owner map[string]string, known func(string) bool, where string) {
	for j, n := range list {
		switch {
		case !known(n):
			l.failAt("tenants", fmt.Sprintf("%s[%d]", at, j), "%q is not in %s", n, where)
		case owner[n] != "" && owner[n] != name:
			l.failAt("tenants", fmt.Sprintf("%s[%d]", at, j), "%q is already tenant %q's: a credential belongs to one tenant", n, owner[n])
		}
		owner[n] = name
	}
}

// tenantKeys checks t's dkim_keys (each in dkim.keys and one tenant's), or
// gives it those of its domains.
func (l *loader) tenantKeys(c *Config, t *tenant.Tenant, at string, owner map[tenant.Key]string) {
	if len(t.Keys) == 0 {
		for _, k := range c.DKIM.Keys {
			if slices.Contains(t.Domains, k.Domain) {
				t.Keys = append(t.Keys, tenant.Key{Domain: k.Domain, Selector: strings.ToLower(k.Selector)})
			}
		}
	}
	for j, k := range t.Keys {
		if !slices.ContainsFunc(c.DKIM.Keys, func(d DKIMKey) bool { return d.Domain == k.Domain && strings.EqualFold(d.Selector, k.Selector) }) {
			l.failAt("tenants", fmt.Sprintf("%s.dkim_keys[%d]", at, j), "%s:%s is not a key of dkim.keys", k.Domain, k.Selector)
		}
		if o := owner[k]; o != "" && o != t.Name {
			l.failAt("tenants", fmt.Sprintf("%s.dkim_keys[%d]", at, j), "%s:%s is already tenant %q's: a key signs for one tenant", k.Domain, k.Selector, o)
		}
		owner[k] = t.Name
	}
}

// allShared reports whether every tenant at ix says shared_domains.
func allShared(ts []tenant.Tenant, ix []int) bool {
	for _, i := range ix {
		if !ts[i].SharedDomains {
			return false
		}
	}
	return true
}
