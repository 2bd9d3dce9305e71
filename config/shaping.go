package config

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/relayq/relayq/delivery/shaping"
)

// The keys of one entry of shaping.providers, shaping.domains and
// shaping.rules, as the file spells them.
var (
	limitKeys    = []string{"max_connections", "max_message_rate", "max_messages_per_connection"}
	domainKeys   = append([]string{adaptiveKey}, limitKeys...)
	providerKeys = append([]string{"name", "mx_suffixes"}, domainKeys...)
	ruleKeys     = []string{"match", "action", "duration", "scope"}
)

// shaping reads the shaping: section into the shaping
// package's plain values; validateShaping checks them.
func (l *loader) shaping() shaping.Config {
	a := l.adaptive()
	return shaping.Config{
		Builtin: l.boolean("shaping.builtin"),
		Defaults: shaping.Limits{
			MaxConnections:           l.intKey("shaping.defaults.max_connections"),
			MaxMessageRate:           l.rate("shaping.defaults.max_message_rate"),
			MaxMessagesPerConnection: l.intKey("shaping.defaults.max_messages_per_connection"),
		},
		Providers: l.shapingProviders("shaping.providers", a.Off),
		Domains:   l.shapingDomains("shaping.domains", a.Off),
		Rules:     l.shapingRules("shaping.rules"),
		Adaptive:  a,
	}
}

func (l *loader) rate(key string) shaping.Rate {
	r, err := shaping.ParseRate(l.str(key))
	if err != nil {
		l.failf(key, "%w", err)
	}
	return r
}

// structured returns the value of a key holding sections. From the
// environment it is YAML in flow style, e.g.
// RELAYQ_SHAPING_RULES='[{match: "4\.7\.28", action: suspend, duration: 10m}]'.
func (l *loader) structured(key string) any {
	val := l.get(key)
	s, ok := val.(string)
	if !ok {
		return val
	}
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out any
	if err := yaml.Unmarshal([]byte(s), &out); err != nil {
		l.failf(key, "not YAML: %s", strings.Join(strings.Fields(err.Error()), " "))
		return nil
	}
	return out
}

// list returns the entries of a list of sections.
func (l *loader) list(key, what string) []map[string]any {
	var items []any
	switch x := l.structured(key).(type) {
	case nil:
	case []any:
		items = x
	default:
		l.failf(key, "%s is not a list of %s", describe(x), what)
		return nil
	}
	out := make([]map[string]any, 0, len(items))
	for i, item := range items {
		m, ok := stringMap(item)
		if !ok {
			l.failAt(key, fmt.Sprintf("[%d]", i), "%s is not a section of %s keys", describe(item), what)
			return nil
		}
		out = append(out, m)
	}
	return out
}

// entry reads the keys of one section inside a list or map value.
type entry struct {
	l    *loader
	leaf string // the key holding the list or map, dotted
	at   string // "[2]" or ".example.com"
	m    map[string]any
}

// known refuses keys other than names.
func (e entry) known(names []string) bool {
	for _, k := range sortedKeys(e.m) {
		found := false
		for _, n := range names {
			found = found || k == n
		}
		if !found {
			e.l.failAt(e.leaf, e.at, "unknown key %q (want %s)", k, strings.Join(names, ", "))
			return false
		}
	}
	return true
}

func (e entry) fail(name, format string, args ...any) {
	e.l.failAt(e.leaf, e.at+"."+name, format, args...)
}

func (e entry) str(name string) string {
	switch x := e.m[name].(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		e.fail(name, "%s is not a string; put it in quotes", describe(x))
		return ""
	}
}

// positive reads a whole number of at least 1; absent is 0 ("inherit").
func (e entry) positive(name string) int {
	val, ok := e.m[name]
	if !ok || val == nil {
		return 0
	}
	var n float64
	switch x := val.(type) {
	case int:
		n = float64(x)
	case int64:
		n = float64(x)
	case uint64:
		n = float64(x)
	case float64:
		n = x
	default:
		e.fail(name, "%s is not a whole number", describe(val))
		return 0
	}
	if n != math.Trunc(n) || n < 1 || n > math.MaxInt32 {
		e.fail(name, "%s must be a whole number of at least 1 (leave the key out to use shaping.defaults)", describe(val))
		return 0
	}
	return int(n)
}

func (e entry) limits() shaping.Limits {
	r, err := shaping.ParseRate(e.str("max_message_rate"))
	if err != nil {
		e.fail("max_message_rate", "%w", err)
	}
	return shaping.Limits{
		MaxConnections:           e.positive("max_connections"),
		MaxMessageRate:           r,
		MaxMessagesPerConnection: e.positive("max_messages_per_connection"),
	}
}

// entries returns the sections of a list, each with only known keys.
func (l *loader) entries(key, what string, keys []string) []entry {
	var out []entry
	for i, m := range l.list(key, what) {
		e := entry{l: l, leaf: key, at: fmt.Sprintf("[%d]", i), m: m}
		if !e.known(keys) {
			return nil
		}
		out = append(out, e)
	}
	return out
}

func (l *loader) shapingProviders(key string, off map[shaping.Scope]bool) []shaping.Provider {
	out := []shaping.Provider{}
	for _, e := range l.entries(key, "provider", providerKeys) {
		var suffixes []string
		switch x := e.m["mx_suffixes"].(type) {
		case nil:
		case string:
			suffixes = []string{x}
		case []any:
			for j, s := range x {
				str, ok := s.(string)
				if !ok {
					e.fail(fmt.Sprintf("mx_suffixes[%d]", j), "%s is not a string", describe(s))
					return nil
				}
				suffixes = append(suffixes, strings.TrimSpace(str))
			}
		default:
			e.fail("mx_suffixes", "%s is not a list of host name suffixes", describe(x))
			return nil
		}
		name := strings.TrimSpace(e.str("name"))
		if !e.adapts() {
			off[shaping.Scope{Kind: shaping.ScopeProvider, Name: name}] = true
		}
		out = append(out, shaping.Provider{Name: name, MXSuffixes: suffixes, Limits: e.limits()})
	}
	return out
}

// shapingDomains reads domain: {limits}. Domains are lower-cased without
// a trailing dot, as delivery.routes.
func (l *loader) shapingDomains(key string, off map[shaping.Scope]bool) map[string]shaping.Limits {
	out := map[string]shaping.Limits{}
	raw := l.structured(key)
	if raw == nil {
		return out
	}
	m, ok := stringMap(raw)
	if !ok {
		l.failf(key, "%s is not a section of domain: {max_connections: ..., max_message_rate: ...}", describe(raw))
		return nil
	}
	for _, dom := range sortedKeys(m) {
		sec, ok := stringMap(m[dom])
		if m[dom] == nil {
			sec, ok = map[string]any{}, true
		}
		if !ok {
			l.failAt(key, "."+dom, "%s is not a section of limits", describe(m[dom]))
			return nil
		}
		e := entry{l: l, leaf: key, at: "." + dom, m: sec}
		if !e.known(domainKeys) {
			return nil
		}
		norm := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(dom)), ".")
		if _, dup := out[norm]; dup {
			l.failAt(key, "."+dom, "domain %q is listed twice", norm)
			return nil
		}
		out[norm] = e.limits()
		if !e.adapts() {
			off[shaping.Scope{Kind: shaping.ScopeDomain, Name: norm}] = true
		}
	}
	return out
}

func (l *loader) shapingRules(key string) []shaping.Rule {
	out := []shaping.Rule{}
	for _, e := range l.entries(key, "rule", ruleKeys) {
		r := shaping.Rule{Match: e.str("match")}
		var err error
		if a := e.str("action"); strings.TrimSpace(a) == "" {
			e.fail("action", "missing; want suspend, throttle, bounce or slow")
		} else if r.Action, err = shaping.ParseAction(a); err != nil {
			e.fail("action", "%w", err)
		}
		if r.Scope, err = shaping.ParseScopeKind(e.str("scope")); err != nil {
			e.fail("scope", "%w", err)
		}
		if d, ok := e.m["duration"]; ok && d != nil {
			if r.Duration, err = durationOf(d); err != nil {
				e.fail("duration", "%w", err)
			}
		}
		out = append(out, r)
	}
	return out
}

// validateShaping maps the deprecated delivery.max_conns_per_domain onto
// shaping.defaults.max_connections and checks the section. It runs after
// validateDelivery, which checked the old key's own value.
func (l *loader) validateShaping(c *Config) {
	const oldKey, newKey = "delivery.max_conns_per_domain", "shaping.defaults.max_connections"
	s := &c.Shaping
	switch {
	case l.setByUser(oldKey) && l.setByUser(newKey) && c.Delivery.MaxConnsPerDomain != s.Defaults.MaxConnections:
		l.failf(oldKey, "deprecated and replaced by %s, which is also set (%d, here %d); keep only %s", newKey, s.Defaults.MaxConnections, c.Delivery.MaxConnsPerDomain, newKey)
		return
	case l.setByUser(oldKey):
		s.Defaults.MaxConnections = c.Delivery.MaxConnsPerDomain
	}
	c.Delivery.MaxConnsPerDomain = s.Defaults.MaxConnections
	l.atLeast(newKey, int64(s.Defaults.MaxConnections), 1)
	l.atLeast("shaping.defaults.max_messages_per_connection", int64(s.Defaults.MaxMessagesPerConnection), 1)
	if l.err != nil {
		return
	}
	var fe *shaping.FieldError
	if err := s.Check(); errors.As(err, &fe) && fe.Key == "adaptive" {
		l.failf("shaping.adaptive"+fe.Detail, "%w", fe.Err) // a leaf: its environment variable is named
	} else if fe != nil {
		l.failAt("shaping."+fe.Key, fe.Detail, "%w", fe.Err)
	} else if err != nil {
		l.failf("shaping", "%w", err)
	}
}
