package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/relayq/relayq/delivery/egress"
	"github.com/relayq/relayq/internal/identity"
)

// poolKey is the optional key of streams[], users[] and api_keys[] that
// names the pool their mail is sent through.
const poolKey = "pool"

// egress reads delivery.egress: the sources, the pools and default_pool.
// The pools of streams and credentials are added by validateEgress, once
// those are read.
func (l *loader) egress() egress.Config {
	var c egress.Config
	for _, e := range l.entries("delivery.egress.sources", "source", []string{"name", "address", "ehlo", "warmup"}) {
		s := egress.Source{Name: strings.TrimSpace(e.str("name")), EHLO: strings.TrimSpace(e.str("ehlo"))}
		if raw, set := e.m["warmup"]; set {
			w, ok := l.warmup(e, raw)
			if !ok {
				return c
			}
			s.Warmup = w
		}
		addr := strings.TrimSpace(e.str("address"))
		a, err := netip.ParseAddr(addr)
		if err != nil || a.Zone() != "" {
			e.fail("address", "%q is not an IP address (the local address to send from, e.g. 192.0.2.10 or 2001:db8::10)", addr)
			return c
		}
		s.Addr = a.Unmap()
		c.Sources = append(c.Sources, s)
	}
	for _, e := range l.entries("delivery.egress.pools", "pool", []string{"name", "sources"}) {
		p := egress.PoolConfig{Name: strings.TrimSpace(e.str("name"))}
		members, ok := e.m["sources"].([]any)
		if !ok {
			e.fail("sources", "%s is not a list of {source: NAME, weight: N}", describe(e.m["sources"]))
			return c
		}
		for j, raw := range members {
			m, ok := l.member(e, j, raw)
			if !ok {
				return c
			}
			p.Members = append(p.Members, m)
		}
		c.Pools = append(c.Pools, p)
	}
	c.DefaultPool = strings.TrimSpace(l.str("delivery.egress.default_pool"))
	return c
}

// warmup reads a source's warmup: {schedule: default | [CAP, ...],
// started: YYYY-MM-DD}.
func (l *loader) warmup(e entry, raw any) (*egress.Warmup, bool) {
	m, ok := stringMap(raw)
	if !ok {
		e.fail("warmup", "%s is not {schedule: default or [daily caps], started: YYYY-MM-DD}", describe(raw))
		return nil, false
	}
	sub := entry{l: l, leaf: e.leaf, at: e.at + ".warmup", m: m}
	if !sub.known([]string{"schedule", "started"}) {
		return nil, false
	}
	w := &egress.Warmup{}
	switch x := m["schedule"].(type) {
	case string:
		if strings.TrimSpace(x) != "default" {
			sub.fail("schedule", "%q: want default or a list of daily caps, day 1 first", x)
			return nil, false
		}
		w.Schedule = egress.DefaultSchedule
	case []any:
		for i, v := range x {
			n, ok := v.(int)
			if !ok {
				sub.fail(fmt.Sprintf("schedule[%d]", i), "%s is not a whole number of messages", describe(v))
				return nil, false
			}
			w.Schedule = append(w.Schedule, n)
		}
	default:
		sub.fail("schedule", "%s: want default or a list of daily caps, day 1 first", describe(m["schedule"]))
		return nil, false
	}
	if err := egress.CheckSchedule(w.Schedule); err != nil {
		sub.fail("schedule", "%v", err)
		return nil, false
	}
	switch x := m["started"].(type) {
	case time.Time:
		w.Started = x.UTC()
	case string:
		t, err := time.Parse(time.DateOnly, strings.TrimSpace(x))
		if err != nil {
			sub.fail("started", "%q is not a date such as 2026-12-01", x)
			return nil, false
		}
		w.Started = t
	default:
		sub.fail("started", "%s: want the first day of the warm-up, e.g. 2026-12-01", describe(m["started"]))
		return nil, false
	}
	return w, true
}

// member reads one source of a pool: {source: NAME, weight: N} (weight 1
// when left out), or NAME alone.
func (l *loader) member(e entry, j int, raw any) (egress.Member, bool) {
	at := fmt.Sprintf("sources[%d]", j)
	if name, ok := raw.(string); ok {
		return egress.Member{Source: strings.TrimSpace(name), Weight: 1}, true
	}
	m, ok := stringMap(raw)
	if !ok {
		e.fail(at, "%s is not {source: NAME, weight: N}", describe(raw))
		return egress.Member{}, false
	}
	sub := entry{l: l, leaf: e.leaf, at: e.at + "." + at, m: m}
	if !sub.known([]string{"source", "weight"}) {
		return egress.Member{}, false
	}
	mem := egress.Member{Source: strings.TrimSpace(sub.str("source")), Weight: 1}
	if w, set := m["weight"]; set {
		n, ok := w.(int)
		if !ok || n < 1 || n > maxWeight {
			sub.fail("weight", "%s must be a whole number from 1 to %d (the source's share of the pool's new connections)", describe(w), maxWeight)
			return egress.Member{}, false
		}
		mem.Weight = n
	}
	return mem, true
}

// validateEgress checks delivery.egress with the streams and credentials
// that name pools: every name known, each source's address one this host
// can bind. The pools of streams and credentials go into
// c.Delivery.Egress, for egress.New.
func (l *loader) validateEgress(c *Config) {
	const key = "delivery.egress"
	e := &c.Delivery.Egress
	sources, pools := map[string]bool{}, map[string]bool{}
	for i, s := range e.Sources {
		at := fmt.Sprintf("[%d]", i)
		switch {
		case !streamName.MatchString(s.Name):
			l.failAt(key+".sources", at+".name", "%q is not a source name (1-32 lower-case letters, digits, '-' or '_')", s.Name)
		case sources[s.Name]:
			l.failAt(key+".sources", at, "source %q is listed twice", s.Name)
		case s.EHLO == "" || strings.ContainsAny(s.EHLO, " \t\r\n"):
			l.failAt(key+".sources", at+".ehlo", "%q: give the name this address says in EHLO (its PTR should name it, and it should resolve to the address)", s.EHLO)
		default:
			if err := canBind(s.Addr); err != nil {
				l.failAt(key+".sources", at+".address", "this host cannot send from %s: %v", s.Addr, err)
			}
		}
		sources[s.Name] = true
	}
	for i, p := range e.Pools {
		at := fmt.Sprintf("[%d]", i)
		switch {
		case !streamName.MatchString(p.Name):
			l.failAt(key+".pools", at+".name", "%q is not a pool name (1-32 lower-case letters, digits, '-' or '_')", p.Name)
		case pools[p.Name]:
			l.failAt(key+".pools", at, "pool %q is listed twice", p.Name)
		case len(p.Members) == 0:
			l.failAt(key+".pools", at+".sources", "pool %q has no source", p.Name)
		}
		pools[p.Name] = true
		for j, m := range p.Members {
			if !sources[m.Source] {
				l.failAt(key+".pools", fmt.Sprintf("%s.sources[%d].source", at, j), "%q is not a source listed under delivery.egress.sources", m.Source)
			}
		}
	}
	known := func(pool string) bool { return pool == "" || pools[pool] || len(e.Pools) == 0 && pool == "default" }
	if !known(e.DefaultPool) {
		l.failf(key+".default_pool", "%q is not a pool listed under delivery.egress.pools", e.DefaultPool)
	}
	l.poolsOfStreamsAndCredentials(c, known)
	if l.err != nil || !e.Enabled() {
		return
	}
	if _, err := egress.New(*e); err != nil {
		l.failf(key, "%v", err)
	}
}

// poolsOfStreamsAndCredentials checks the pools streams, users and API
// keys name and puts them into c.Delivery.Egress.
func (l *loader) poolsOfStreamsAndCredentials(c *Config, known func(string) bool) {
	e := &c.Delivery.Egress
	named := func(leaf, at, who, pool string) bool {
		switch {
		case pool == "":
			return false
		case !e.Enabled():
			l.failAt(leaf, at+".pool", "%s names pool %q, but delivery.egress lists no sources", who, pool)
		case !known(pool):
			l.failAt(leaf, at+".pool", "%s names pool %q, which delivery.egress.pools does not list", who, pool)
		}
		return true
	}
	for i, s := range c.Streams {
		if named("streams", fmt.Sprintf("[%d]", i), "stream "+s.Name, s.Pool) {
			if e.Streams == nil {
				e.Streams = map[string]string{}
			}
			e.Streams[s.Name] = s.Pool
		}
	}
	cred := func(kind identity.Kind, name, pool string) {
		if e.Credentials == nil {
			e.Credentials = map[identity.Credential]string{}
		}
		e.Credentials[identity.Credential{Kind: kind, Name: name}] = pool
	}
	for i, u := range c.Submission.Users {
		if named("submission.users", fmt.Sprintf("[%d]", i), "user "+u.Username, u.Pool) {
			cred(identity.User, u.Username, u.Pool)
		}
	}
	for i, k := range c.Submission.APIKeys {
		if named("submission.api_keys", fmt.Sprintf("[%d]", i), "key "+k.Name, k.Pool) {
			cred(identity.APIKey, k.Name, k.Pool)
		}
	}
}

// canBind reports whether this host has addr: a TCP listener on it, port
// chosen by the kernel, is opened and closed at once.
func canBind(addr netip.Addr) error {
	ln, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			return op.Err
		}
		return err
	}
	return ln.Close()
}
