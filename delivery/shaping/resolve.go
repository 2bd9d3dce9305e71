package shaping

import (
	"fmt"
	"slices"
	"strings"
)

// Policy is a checked Config, with the built-in providers and rules added
// when Config.Builtin is set. It never changes; a new configuration is a
// new Policy (Shaper.SetPolicy). Safe for concurrent use.
type Policy struct {
	defaults  Limits
	providers []Provider
	domains   map[string]Limits
	rules     []compiledRule
	adaptive  Adaptive
}

// NewPolicy checks c and builds its Policy. The error is a *FieldError.
func NewPolicy(c Config) (*Policy, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	p := &Policy{defaults: c.Defaults, domains: make(map[string]Limits, len(c.Domains)), adaptive: c.Adaptive}
	for dom, l := range c.Domains {
		p.domains[normalName(dom)] = l
	}
	mine := map[string]bool{}
	for _, pr := range c.Providers {
		p.providers = append(p.providers, normalProvider(pr))
		mine[pr.Name] = true
	}
	rules := make([]Rule, 0, len(c.Rules))
	for i, r := range c.Rules {
		if r.Name == "" {
			r.Name = fmt.Sprintf("rules[%d]", i)
		}
		rules = append(rules, r)
	}
	if c.Builtin {
		b, err := builtin()
		if err != nil {
			return nil, err
		}
		for _, pr := range b.Providers {
			if !mine[pr.Name] {
				p.providers = append(p.providers, normalProvider(pr))
			}
		}
		rules = append(rules, b.Rules...)
	}
	for _, r := range rules {
		cr, err := r.compile()
		if err != nil {
			return nil, fmt.Errorf("shaping: rule %s: %w", r.Name, err)
		}
		p.rules = append(p.rules, cr)
	}
	return p, nil
}

func normalProvider(pr Provider) Provider {
	out := pr
	out.MXSuffixes = make([]string, len(pr.MXSuffixes))
	for i, s := range pr.MXSuffixes {
		out.MXSuffixes[i] = normalName(s)
	}
	return out
}

// Bound is one scope of a Target and the limits enforced there.
type Bound struct {
	Scope  Scope
	Limits Limits
	key    string // Scope.String(), computed once by Resolve
}

// Key is the scope's name in State: Scope.String().
func (b Bound) Key() string {
	if b.key != "" {
		return b.key
	}
	return b.Scope.String()
}

// Target is where a delivery goes, as shaping sees it: the scopes whose
// limits and suspensions apply. Resolve makes it; the zero Target has no
// scope and no limit.
type Target struct {
	// Bounds: the provider's scope first when one matched, then the
	// domain's (always present; zero Limits when the provider's apply and
	// the domain has no entry of its own).
	Bounds []Bound
	// MaxMessagesPerConnection closes a reused connection after this many
	// messages (0: no limit).
	MaxMessagesPerConnection int
	keys                     []string // the Bounds' keys, made once by Resolve
	// base are the keys of the Bounds from every source, for a target of
	// one source (ForSource): a suspension of the scope itself (an
	// operator's) holds every source's mail.
	base []string
}

// ForSource is t for mail from the egress source named source: each
// scope is that source's own (Scope.Source), so connections, rates,
// learned paces and suspensions are counted per source, while a
// suspension of a scope from every source still applies.
func (t Target) ForSource(source string) Target {
	out := Target{MaxMessagesPerConnection: t.MaxMessagesPerConnection, Bounds: make([]Bound, len(t.Bounds)), keys: make([]string, len(t.Bounds)), base: t.scopeKeys()}
	for i, b := range t.Bounds {
		b.Scope = b.Scope.Base()
		b.Scope.Source = source
		b.key = b.Scope.String()
		out.Bounds[i], out.keys[i] = b, b.key
	}
	return out
}

// Source is the egress source t is for ("": none).
func (t Target) Source() string {
	if len(t.Bounds) == 0 {
		return ""
	}
	return t.Bounds[0].Scope.Source
}

// suspensionKeys are the keys whose suspensions hold t: its own, and for
// a source's target those of its scopes from every source.
func (t Target) suspensionKeys() []string {
	if len(t.base) == 0 {
		return t.scopeKeys()
	}
	return append(slices.Clip(t.scopeKeys()), t.base...)
}

// scopeKeys returns the keys of t's bounds.
func (t Target) scopeKeys() []string {
	if len(t.keys) == len(t.Bounds) {
		return t.keys
	}
	keys := make([]string, len(t.Bounds))
	for i, b := range t.Bounds {
		keys[i] = b.Key()
	}
	return keys
}

// Provider returns the matched provider's scope.
func (t Target) Provider() (Scope, bool) {
	if len(t.Bounds) > 1 {
		return t.Bounds[0].Scope, true
	}
	return Scope{}, false
}

// Domain returns the domain scope.
func (t Target) Domain() Scope {
	if len(t.Bounds) == 0 {
		return Scope{}
	}
	return t.Bounds[len(t.Bounds)-1].Scope
}

// Primary is the scope a rule with scope "provider" acts on: the
// provider's when one matched, else the domain's.
func (t Target) Primary() Scope {
	if len(t.Bounds) == 0 {
		return Scope{}
	}
	return t.Bounds[0].Scope
}

// MaxConnections is the tightest connection limit of t (0: none).
func (t Target) MaxConnections() int {
	n := 0
	for _, b := range t.Bounds {
		if m := b.Limits.MaxConnections; m > 0 && (n == 0 || m < n) {
			n = m
		}
	}
	return n
}

// Resolve says which scopes and limits apply to mail for key.
//
// For MX delivery key is the recipient domain and hosts its MX host names
// (the implicit MX counts as one); for a static route or the smarthost key
// is the route's domain key or "*" and hosts is nil, so the route's
// domains entry decides and no provider matches. A domain belongs to the
// first provider (user providers before built-in ones) that every one of
// its hosts matches; that provider's scope is shared by all its domains.
func (p *Policy) Resolve(key string, hosts []string) Target {
	key = normalName(key)
	own, hasOwn := p.domains[key]
	domain := Scope{Kind: ScopeDomain, Name: key}
	pr, ok := p.provider(hosts)
	if !ok {
		l := own.or(p.defaults)
		return Target{
			Bounds:                   []Bound{{Scope: domain, Limits: l, key: domain.String()}},
			MaxMessagesPerConnection: l.MaxMessagesPerConnection,
			keys:                     []string{domain.String()},
		}
	}
	pl := pr.Limits.or(p.defaults)
	var dl Limits
	if hasOwn {
		dl = own
	}
	per := pl.MaxMessagesPerConnection
	if m := dl.MaxMessagesPerConnection; m > 0 && m < per {
		per = m
	}
	ps := Scope{Kind: ScopeProvider, Name: pr.Name}
	return Target{
		Bounds: []Bound{
			{Scope: ps, Limits: pl, key: ps.String()},
			{Scope: domain, Limits: dl, key: domain.String()},
		},
		MaxMessagesPerConnection: per,
		keys:                     []string{ps.String(), domain.String()},
	}
}

// provider finds the first provider matching every host.
func (p *Policy) provider(hosts []string) (Provider, bool) {
	if len(hosts) == 0 {
		return Provider{}, false
	}
	for _, pr := range p.providers {
		all := true
		for _, h := range hosts {
			if !matchesSuffix(normalName(h), pr.MXSuffixes) {
				all = false
				break
			}
		}
		if all {
			return pr, true
		}
	}
	return Provider{}, false
}

// matchesSuffix: ".google.com" matches below google.com; "google.com"
// matches google.com itself and below it, never "evilgoogle.com".
func matchesSuffix(host string, suffixes []string) bool {
	for _, s := range suffixes {
		if strings.HasPrefix(s, ".") {
			if strings.HasSuffix(host, s) {
				return true
			}
		} else if host == s || strings.HasSuffix(host, "."+s) {
			return true
		}
	}
	return false
}

// Providers lists the provider names of the policy (user and built-in),
// a bounded set a metrics package may use as label values.
func (p *Policy) Providers() []string {
	out := make([]string, len(p.providers))
	for i, pr := range p.providers {
		out[i] = pr.Name
	}
	return out
}
