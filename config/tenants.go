package config

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/tenant"
)

// tenantKeys are the keys of one tenants[] section.
var tenantKeys = []string{"name", "api_keys", "users", "domains", "shared_domains", "dkim_keys", "quotas", "suppression", "reputation", "stream"}

// Reputation defaults, from the published figures: Gmail's sender
// guidelines ask bulk senders to keep spam complaints below 0.3 % (and
// ideally below 0.1 %); keila suspends an account at 5 % bounces.
const (
	defaultComplaintWarn  = 0.001
	defaultComplaintPause = 0.003
	defaultBounceWarn     = 0.02
	defaultBouncePause    = 0.05
	defaultRepWindow      = 24 * time.Hour
	defaultRepMinVolume   = 200
)

// tenants reads the tenants list: each a tenant.Tenant. Cross-checks
// against the credentials, streams and keys are in validateTenants.
func (l *loader) tenants() []tenant.Tenant {
	out := []tenant.Tenant{}
	for _, e := range l.entries("tenants", "tenant", tenantKeys) {
		t := tenant.Tenant{
			Name:    strings.TrimSpace(e.str("name")),
			APIKeys: e.strs("api_keys"),
			Users:   e.strs("users"),
			Stream:  strings.TrimSpace(e.str("stream")),
		}
		for _, d := range e.strs("domains") {
			t.Domains = append(t.Domains, strings.ToLower(strings.TrimSuffix(strings.TrimSpace(d), ".")))
		}
		for i, k := range e.strs("dkim_keys") {
			d, s, ok := strings.Cut(k, ":")
			if !ok || d == "" || s == "" {
				e.fail(fmt.Sprintf("dkim_keys[%d]", i), "%q is not domain:selector (a key of dkim.keys)", k)
				continue
			}
			t.Keys = append(t.Keys, tenant.Key{Domain: strings.ToLower(strings.TrimSuffix(d, ".")), Selector: strings.ToLower(s)})
		}
		switch s := e.str("suppression"); s {
		case "", "global":
		case "tenant":
			t.Suppression = tenant.Own
		default:
			e.fail("suppression", "%q is neither tenant nor global", s)
		}
		t.Quotas = e.quotas()
		t.Reputation = e.reputation()
		t.SharedDomains = e.m["shared_domains"] == true
		if v, ok := e.m["shared_domains"]; ok && v != true && v != false {
			e.fail("shared_domains", "%s is not true or false", describe(v))
		}
		out = append(out, t)
	}
	return out
}

// strs reads a list of strings (or one string) from the section.
func (e entry) strs(name string) []string {
	switch x := e.m[name].(type) {
	case nil:
		return nil
	case string:
		return []string{strings.TrimSpace(x)}
	case []any:
		out := make([]string, 0, len(x))
		for i, v := range x {
			s, ok := v.(string)
			if !ok {
				e.fail(fmt.Sprintf("%s[%d]", name, i), "%s is not a string; put it in quotes", describe(v))
				return nil
			}
			out = append(out, strings.TrimSpace(s))
		}
		return out
	}
	e.fail(name, "%s is not a list of strings", describe(e.m[name]))
	return nil
}

// sub is the entry of a section inside this one.
func (e entry) sub(name string, keys []string) (entry, bool) {
	v, set := e.m[name]
	if !set || v == nil {
		return entry{}, false
	}
	m, ok := stringMap(v)
	if !ok {
		e.fail(name, "%s is not a section of keys", describe(v))
		return entry{}, false
	}
	s := entry{l: e.l, leaf: e.leaf, at: e.at + "." + name, m: m}
	return s, s.known(keys)
}

// quotas reads quotas: whole numbers of at least 1, absent for none.
func (e entry) quotas() tenant.Quotas {
	s, ok := e.sub("quotas", []string{"per_minute", "per_day", "per_month", "over"})
	if !ok {
		return tenant.Quotas{}
	}
	q := tenant.Quotas{PerMinute: s.count("per_minute"), PerDay: s.count("per_day"), PerMonth: s.count("per_month")}
	switch o := s.str("over"); o {
	case "", "refuse":
	case "hold":
		q.Over = tenant.Hold
	default:
		s.fail("over", "%q is neither refuse nor hold", o)
	}
	return q
}

// count reads a quota: absent is 0 (none); anything set must be a whole
// number of at least 1 (a quota of 0 would refuse everything: leave the
// tenant's credentials out instead).
func (e entry) count(name string) int {
	v, set := e.m[name]
	if !set {
		return 0
	}
	n, ok := v.(int)
	if !ok || n < 1 {
		e.fail(name, "%s must be a whole number of at least 1 (leave the key out for no quota)", describe(v))
		return 0
	}
	return n
}

// reputation reads the thresholds, with the defaults cited above.
func (e entry) reputation() tenant.Reputation {
	r := tenant.Reputation{Window: defaultRepWindow, MinVolume: defaultRepMinVolume,
		BounceWarn: defaultBounceWarn, BouncePause: defaultBouncePause,
		ComplaintWarn: defaultComplaintWarn, ComplaintPause: defaultComplaintPause}
	s, ok := e.sub("reputation", []string{"window", "min_volume", "bounce_warn", "bounce_pause", "complaint_warn", "complaint_pause", "resume"})
	if !ok {
		return r
	}
	if _, set := s.m["window"]; set {
		r.Window = s.dur("window")
		if r.Window <= 0 {
			s.fail("window", "must be positive")
		}
	}
	if _, set := s.m["min_volume"]; set {
		r.MinVolume = s.count("min_volume")
	}
	for name, p := range map[string]*float64{"bounce_warn": &r.BounceWarn, "bounce_pause": &r.BouncePause,
		"complaint_warn": &r.ComplaintWarn, "complaint_pause": &r.ComplaintPause} {
		if v, set := s.m[name]; set {
			*p = s.rate(name, v)
		}
	}
	switch v := s.m["resume"]; v {
	case nil, "manual":
	default:
		if r.Resume = s.dur("resume"); r.Resume <= 0 {
			s.fail("resume", "%s is neither manual nor a positive duration", describe(v))
		}
	}
	return r
}

func (e entry) dur(name string) time.Duration {
	d, err := durationOf(e.m[name])
	if err != nil {
		e.fail(name, "%w", err)
	}
	return d
}

// rate reads a fraction from 0 to 1 (0 turns the threshold off).
func (e entry) rate(name string, v any) float64 {
	var f float64
	switch x := v.(type) {
	case int:
		f = float64(x)
	case float64:
		f = x
	default:
		e.fail(name, "%s is not a number", describe(v))
		return 0
	}
	if f < 0 || f > 1 || math.IsNaN(f) {
		e.fail(name, "%v is not a fraction from 0 to 1 (0.003 is 0.3 %%)", f)
	}
	return f
}
