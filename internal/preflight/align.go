package preflight

import (
	"strings"

	"golang.org/x/net/publicsuffix"
)

// OrgDomain is domain's organizational domain (RFC 7489 section 3.2):
// the public suffix and one label more. ok is false for a public suffix
// itself, or a name that is not a domain.
func OrgDomain(domain string) (org string, ok bool) {
	domain = normal(domain)
	if domain == "" || strings.Contains(domain, "..") {
		return "", false
	}
	org, err := publicsuffix.EffectiveTLDPlusOne(domain)
	if err != nil {
		return "", false
	}
	return org, true
}

// Aligned reports whether an identifier domain (a DKIM d= or the return
// path's domain) aligns with the From: domain (RFC 7489 section 3.1):
// strictly the same name, or relaxed the same organizational domain.
func Aligned(from, id string, strict bool) bool {
	from, id = normal(from), normal(id)
	if from == "" || id == "" {
		return false
	}
	if from == id {
		return true
	}
	if strict {
		return false
	}
	of, ok1 := OrgDomain(from)
	oi, ok2 := OrgDomain(id)
	return ok1 && ok2 && of == oi
}

// signingDomain is the key domain the signer would use for from: the
// configured domain equal to it or its nearest parent (internal/dkim's
// keysFor), "" for none.
func signingDomain(keys map[string]bool, from string) string {
	for d := normal(from); d != ""; {
		if keys[d] {
			return d
		}
		_, parent, ok := strings.Cut(d, ".")
		if !ok {
			break
		}
		d = parent
	}
	return ""
}

func normal(d string) string { return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(d), ".")) }
