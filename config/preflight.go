package config

import (
	"fmt"
	"os"
	"strings"
)

// Preflight is a stream's checks before mail is accepted (docs/deliverability.md):
// each "" (off), "warn" or "refuse"; OneClick may also be "add".
type Preflight struct {
	DKIMAlignment string
	DMARC         string
	OneClick      string
}

// preflightKeys are the keys of streams[].preflight.
var preflightKeys = []string{"dkim_alignment", "dmarc", "one_click"}

// preflight reads a stream's preflight section; absent, every check is off.
func (e entry) preflight() Preflight {
	var p Preflight
	raw, set := e.m["preflight"]
	if !set || raw == nil {
		return p
	}
	m, ok := raw.(map[string]any)
	if !ok {
		e.fail("preflight", "%s is not a section {dkim_alignment, dmarc, one_click}", describe(raw))
		return p
	}
	sub := entry{l: e.l, leaf: e.leaf, at: e.at + ".preflight", m: m}
	if !sub.known(preflightKeys) {
		return p
	}
	mode := func(key string, add bool, into *string) {
		v, set := m[key]
		if !set || v == nil {
			return
		}
		s, _ := v.(string)
		s = strings.ToLower(strings.TrimSpace(s))
		switch {
		case s == "off":
			*into = ""
		case s == "warn" || s == "refuse", s == "add" && add:
			*into = s
		case add:
			sub.fail(key, "%s is not one of off, warn, refuse, add", describe(v))
		default:
			sub.fail(key, "%s is not one of off, warn, refuse", describe(v))
		}
	}
	mode("dkim_alignment", false, &p.DKIMAlignment)
	mode("dmarc", false, &p.DMARC)
	mode("one_click", true, &p.OneClick)
	return p
}

// Unsubscribe is relayq's own one-click unsubscribe (RFC 8058): the
// listener that takes the POSTs, the public base of the links, and the
// key that signs them.
type Unsubscribe struct {
	Listen     []string
	URL        string
	SecretFile string
}

// MinUnsubscribeSecretBytes is the shortest key unsubscribe.secret_file may hold.
const MinUnsubscribeSecretBytes = 16

func (l *loader) unsubscribe() Unsubscribe {
	return Unsubscribe{
		Listen:     l.strList("unsubscribe.listen"),
		URL:        strings.TrimRight(strings.TrimSpace(l.str("unsubscribe.url")), "/"),
		SecretFile: strings.TrimSpace(l.str("unsubscribe.secret_file")),
	}
}

// validateUnsubscribe checks the listener's keys and that a stream asking
// relayq to add one-click headers has a listener to send them to.
func (l *loader) validateUnsubscribe(c *Config) {
	u := c.Unsubscribe
	for i, a := range u.Listen {
		l.listenAddr("unsubscribe.listen", fmt.Sprintf("[%d]", i), a)
	}
	if len(u.Listen) > 0 || u.URL != "" {
		if !strings.HasPrefix(u.URL, "https://") || len(u.URL) <= len("https://") {
			l.failf("unsubscribe.url", "%q is not an https:// URL (RFC 8058 section 3.1: the one-click URI must be https)", u.URL)
		}
		if u.SecretFile == "" {
			l.failf("unsubscribe.secret_file", "empty: the links relayq writes must be signed (e.g. head -c 32 /dev/urandom | base64 > FILE)")
		}
	}
	if u.SecretFile != "" {
		key, err := os.ReadFile(u.SecretFile)
		switch {
		case err != nil:
			l.failf("unsubscribe.secret_file", "%w", err)
		case len(strings.TrimSpace(string(key))) < MinUnsubscribeSecretBytes:
			l.failf("unsubscribe.secret_file", "%s holds %d bytes, at least %d needed (e.g. head -c 32 /dev/urandom | base64 > FILE)",
				u.SecretFile, len(strings.TrimSpace(string(key))), MinUnsubscribeSecretBytes)
		}
	}
	for i, s := range c.Streams {
		if s.Preflight.OneClick == "add" && len(u.Listen) == 0 {
			l.failAt("streams", fmt.Sprintf("[%d].preflight.one_click", i), "add needs unsubscribe.listen and unsubscribe.url: relayq's links must lead to its listener")
		}
		if s.Preflight.OneClick != "" && len(c.DKIM.Headers) > 0 && !signsOneClick(c.DKIM.Headers) {
			l.failf("dkim.headers", "lacks List-Unsubscribe or List-Unsubscribe-Post, which stream %q's one_click needs signed (RFC 8058 section 4)", s.Name)
		}
	}
}

// signsOneClick reports whether a signed-header list covers both one-click fields.
func signsOneClick(headers []string) bool {
	var lu, post bool
	for _, h := range headers {
		lu = lu || strings.EqualFold(strings.TrimSpace(h), "List-Unsubscribe")
		post = post || strings.EqualFold(strings.TrimSpace(h), "List-Unsubscribe-Post")
	}
	return lu && post
}
