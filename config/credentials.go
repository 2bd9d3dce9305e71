package config

import (
	"fmt"
	"regexp"
)

// APIKey is one key for the HTTP submission API. The key a client sends
// is "NAME.SECRET"; only its bcrypt hash is configured.
type APIKey struct {
	Name string
	// KeyHash is a bcrypt hash of the whole key; Load checked its form.
	KeyHash string
	// Stream is the stream of every message submitted with the key; ""
	// leaves it to the X-Relayq-Stream header or default_stream.
	Stream string
	// Pool is the egress pool of the key's mail, unless its stream has
	// one; "" for delivery.egress.default_pool.
	Pool string
}

// apiKeys reads submission.api_keys: a list of {name, key_hash, stream,
// pool}, or "name:hash[:stream[:pool]],..." from the environment.
func (l *loader) apiKeys(key string) []APIKey {
	out := []APIKey{}
	for _, p := range l.pairs(key, "name", "key_hash") {
		out = append(out, APIKey{Name: p[0], KeyHash: p[1], Stream: p[2], Pool: p[3]})
	}
	return out
}

// apiKeyName is what a key's name may be: it is the part of the key before
// the dot, so it has no dot itself.
var apiKeyName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidAPIKeyName reports whether name may name an API key.
func ValidAPIKeyName(name string) bool { return apiKeyName.MatchString(name) }

func (l *loader) validateAPIKeys(s *Submission) {
	const key = "submission.api_keys"
	seen := map[string]bool{}
	for i, k := range s.APIKeys {
		at := fmt.Sprintf("[%d]", i)
		switch {
		case !apiKeyName.MatchString(k.Name):
			l.failAt(key, at+".name", "%q is not a key name (1-64 letters, digits, '-' or '_')", k.Name)
		case seen[k.Name]:
			l.failAt(key, at, "name %q is listed twice", k.Name)
		case !isBcrypt(k.KeyHash):
			l.failAt(key, at+".key_hash", "the hash of %q is not a bcrypt hash; make one with `relayq apikey new %s`", k.Name, k.Name)
		}
		seen[k.Name] = true
	}
	if len(s.APIKeys) > 0 && !s.TLS.Enabled() && !s.AllowInsecureAuth {
		l.failf(key, "keys would travel in clear: needs submission.tls (or allow_insecure_auth: true)")
	}
	if s.HTTPListen != "" {
		l.listenAddr("submission.http_listen", "", s.HTTPListen)
	}
}
