package config

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/relayq/relayq/internal/redact"
	"go.yaml.in/yaml/v3"
)

// secretWords mark a name (a key or a field of a list entry) that holds a
// secret when they are one of its words: admin.token, smarthost.password,
// users[].password_hash, api_keys[].key_hash, webhooks[].secret. A new key
// so named is redacted without anyone remembering to list it.
var secretWords = map[string]bool{
	"token": true, "tokens": true, "secret": true, "secrets": true,
	"password": true, "passwords": true, "passwd": true, "hash": true, "hashes": true,
	"key": true, "keys": true, "auth": true, "credential": true, "credentials": true,
}

// notSecret are keys a secret word names but whose type holds no secret
// (a switch, a count, a duration); secrets_test.go checks their types.
var notSecret = map[string]bool{
	"submission" + delim + "allow_insecure_auth":                     true,
	"submission" + delim + "auth_max_failures":                       true,
	"submission" + delim + "auth_lockout":                            true,
	"delivery" + delim + "smarthost" + delim + "allow_insecure_auth": true,
}

// secretName reports whether a name marks its string value secret. A name
// ending in _file names a path (the file holds the secret): shown.
func secretName(name string) bool {
	words := strings.Split(name, "_")
	if words[len(words)-1] == "file" {
		return false
	}
	for _, w := range words {
		if secretWords[w] {
			return true
		}
	}
	return false
}

// secretKey reports whether a key (internal form) holds a secret whole.
func secretKey(k string) bool {
	return !notSecret[k] && secretName(k[strings.LastIndex(k, delim)+1:])
}

// shownRaw is the value Shown redacts: sections from the environment
// decoded from their YAML, so that their fields are redacted one by one,
// and the API keys and DKIM keys as decoded whatever form they were
// given in (from the environment, name:hash pairs).
func (l *loader) shownRaw(k string, val any, c *Config) any {
	switch k {
	case "submission" + delim + "users":
		// Usernames say who may log in and are shown; hashes are not.
		names := make([]any, len(c.Submission.Users))
		for i, u := range c.Submission.Users {
			names[i] = u.Username + ":" + Redacted
		}
		return names
	case "submission" + delim + "api_keys":
		keys := make([]any, len(c.Submission.APIKeys))
		for i, a := range c.Submission.APIKeys {
			keys[i] = map[string]any{"name": a.Name, "key_hash": a.KeyHash}
		}
		return keys
	case "dkim" + delim + "keys":
		keys := make([]any, len(c.DKIM.Keys))
		for i, d := range c.DKIM.Keys {
			keys[i] = map[string]any{"domain": d.Domain, "selector": d.Selector, "private_key_file": d.PrivateKeyFile}
		}
		return keys
	}
	if str, ok := val.(string); ok {
		switch l.defaults.Get(k).(type) {
		case []any, map[string]any, map[any]any:
			var out any
			if yaml.Unmarshal([]byte(str), &out) == nil && out != nil {
				return out
			}
		}
	}
	if val == nil {
		return ""
	}
	return val
}

// show renders a value as render does, redacting on the way: a string
// under a secret name whole, any URL's secrets, and in a section each
// field by its own name.
func show(name string, val any) string {
	switch x := val.(type) {
	case nil:
		return `""`
	case string:
		switch {
		case x == "" || x == `""`:
			return `""`
		case secretName(name):
			return Redacted
		case strings.Contains(x, "://"):
			return showURL(x)
		}
		return x
	case []any:
		parts := make([]string, len(x))
		for i, it := range x {
			parts[i] = show(name, it)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if m, ok := stringMap(val); ok {
		parts := make([]string, 0, len(m))
		for _, k := range sortedKeys(m) {
			parts = append(parts, k+": "+show(k, m[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	if secretName(name) {
		return Redacted // a number or a switch under a secret name: say nothing
	}
	return fmt.Sprint(val)
}

// showURL keeps a URL's shape, so that config show says a password or a
// query is set, and hides what authenticates: the password, every query
// value (a token may hide under any name) and the fragment. Text that is
// no URL loses all three (redact.URL).
func showURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return redact.URL(raw)
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"xxxxx"}
		}
		u.RawQuery = q.Encode()
	}
	if u.Fragment != "" {
		u.Fragment = "xxxxx"
	}
	return u.String()
}
