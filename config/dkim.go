package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/dkim"
)

// DKIM configures the signing of outgoing mail.
type DKIM struct {
	Keys []DKIMKey
	// Headers are the fields to sign when present; empty means the default set.
	Headers []string
	// Expiration sets the signatures' x= this long after signing; 0 means none.
	Expiration time.Duration
}

// DKIMKey is one signing key. Load has checked that PrivateKeyFile loads.
type DKIMKey struct {
	// Domain is lower-case, without a trailing dot.
	Domain         string
	Selector       string
	PrivateKeyFile string
}

func (l *loader) dkim() DKIM {
	return DKIM{
		Keys:       l.dkimKeys("dkim.keys"),
		Headers:    l.strList("dkim.headers"),
		Expiration: l.duration("dkim.expiration"),
	}
}

// dkimKeys reads dkim.keys: a list of {domain, selector, private_key_file}
// sections, or "domain:selector:file,..." from the environment.
func (l *loader) dkimKeys(key string) []DKIMKey {
	out := []DKIMKey{}
	switch x := l.get(key).(type) {
	case string:
		for i, item := range strings.Split(x, ",") {
			if item = strings.TrimSpace(item); item == "" {
				continue
			}
			parts := strings.SplitN(item, ":", 3)
			if len(parts) != 3 {
				l.failAt(key, fmt.Sprintf("[%d]", i), "%q is not domain:selector:private_key_file", item)
				return nil
			}
			out = append(out, DKIMKey{Domain: parts[0], Selector: parts[1], PrivateKeyFile: parts[2]})
		}
	case []any:
		for i, item := range x {
			at := fmt.Sprintf("[%d]", i)
			m, ok := stringMap(item)
			if !ok {
				l.failAt(key, at, "%s is not a section with domain, selector and private_key_file", describe(item))
				return nil
			}
			var k DKIMKey
			for _, name := range sortedKeys(m) {
				s, isStr := m[name].(string)
				dst := map[string]*string{"domain": &k.Domain, "selector": &k.Selector, "private_key_file": &k.PrivateKeyFile}[name]
				switch {
				case dst == nil:
					l.failAt(key, at, "unknown key %q", name)
					return nil
				case !isStr:
					l.failAt(key, at+"."+name, "%s is not a string; put it in quotes", describe(m[name]))
					return nil
				}
				*dst = s
			}
			out = append(out, k)
		}
	default:
		l.failf(key, "%s is not a list of keys", describe(x))
		return nil
	}
	for i := range out {
		out[i].Domain = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(out[i].Domain), "."))
		out[i].Selector = strings.TrimSpace(out[i].Selector)
	}
	return out
}

// validateDKIM loads every key now, so that a missing or bad file stops
// relayq at start-up (and check-config) with the file named.
func (l *loader) validateDKIM(d *DKIM) {
	seen := map[string]bool{}
	for i, k := range d.Keys {
		at := fmt.Sprintf("[%d]", i)
		switch {
		case !validHostname(k.Domain):
			l.failAt("dkim.keys", at+".domain", "%q is not a domain name", k.Domain)
		case !validHostname(k.Selector):
			l.failAt("dkim.keys", at+".selector", "%q is not a selector (letters, digits, '-', '.')", k.Selector)
		case seen[k.Domain+" "+strings.ToLower(k.Selector)]:
			l.failAt("dkim.keys", at, "domain %s selector %s is listed twice", k.Domain, k.Selector)
		case k.PrivateKeyFile == "":
			l.failAt("dkim.keys", at+".private_key_file", "empty")
		default:
			if _, err := dkim.LoadKey(k.PrivateKeyFile); err != nil {
				l.failAt("dkim.keys", at+".private_key_file", "%w", err)
			}
		}
		seen[k.Domain+" "+strings.ToLower(k.Selector)] = true
	}
	for i, h := range d.Headers {
		if h == "" || strings.ContainsAny(h, ": \t") {
			l.failAt("dkim.headers", fmt.Sprintf("[%d]", i), "%q is not a header field name", h)
		}
	}
	if d.Expiration < 0 {
		l.failf("dkim.expiration", "%v is negative (0 means signatures never expire)", d.Expiration)
	}
}
