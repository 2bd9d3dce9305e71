package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/relayq/relayq/internal/suggest"
)

// Source says where a setting's value came from.
type Source string

// Sources, from weakest to strongest.
const (
	SourceDefault Source = "default"
	SourceFile    Source = "file"
	SourceEnv     Source = "env"
)

// Setting is one key of the effective configuration, as `relayq config
// show` prints it and as SIGHUP compares it.
type Setting struct {
	Key    string // dotted, e.g. retry.max_delay
	Value  string // the value as written (a list as [a, b]); never redacted
	Source Source
	// Secret keys (tokens, passwords, hashes) are shown redacted whole.
	Secret bool
	// raw is the value as decoded (a list of sections from the
	// environment parsed from its YAML), for Shown to redact field by
	// field; nil in a Setting built by hand, which Shown reads from Value.
	raw any
}

// Redacted marks a secret that is set, in place of its value.
const Redacted = "<redacted>"

// Shown is the value safe to print (secrets.go): every field whose name
// marks a secret redacted, and every URL without its password, query
// values and fragment.
func (s Setting) Shown() string {
	raw := s.raw
	if raw == nil {
		raw = s.Value
	}
	name := s.Key[strings.LastIndex(s.Key, ".")+1:]
	if notSecret[strings.ReplaceAll(s.Key, ".", delim)] {
		name = "" // a switch, count or duration a secret word names
	}
	return show(name, raw)
}

// LoadSettings is Load that also lists every key with its value and
// source, sorted by key.
func LoadSettings(path string) (*Config, []Setting, error) {
	c, l, err := load(path)
	if err != nil {
		return nil, nil, err
	}
	return c, l.settings(c), nil
}

// settings lists every leaf key with its value and source.
func (l *loader) settings(c *Config) []Setting {
	keys := make([]string, 0, len(l.leaves))
	for k := range l.leaves {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Setting, 0, len(keys))
	for _, k := range keys {
		s := Setting{Key: dotted(k), Source: SourceDefault, Secret: secretKey(k)}
		switch {
		case fromEnv(k):
			s.Source = SourceEnv
		case l.v.InConfig(k):
			s.Source = SourceFile
		}
		val := l.v.Get(k)
		if val == nil {
			val = l.defaults.Get(k)
		}
		s.Value = render(val)
		s.raw = l.shownRaw(k, val, c)
		if k == "hostname" && s.Value == `""` {
			s.Value = c.Hostname + " (the system host name)"
			s.raw = s.Value
		}
		if k == "submission"+delim+"users" {
			names := make([]string, len(c.Submission.Users))
			for i, u := range c.Submission.Users {
				names[i] = u.Username + ":" + u.PasswordHash
			}
			s.Value = "[" + strings.Join(names, ", ") + "]"
		}
		out = append(out, s)
	}
	return out
}

// render writes a raw value compactly: strings as they are ("" when
// empty), lists as [a, b], maps as {k: v} sorted by key.
func render(val any) string {
	switch x := val.(type) {
	case nil:
		return `""`
	case string:
		if x == "" {
			return `""`
		}
		return x
	case []any:
		parts := make([]string, len(x))
		for i, it := range x {
			parts[i] = render(it)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		if m, ok := stringMap(val); ok {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			parts := make([]string, len(keys))
			for i, k := range keys {
				parts[i] = k + ": " + render(m[k])
			}
			return "{" + strings.Join(parts, ", ") + "}"
		}
		return fmt.Sprint(x)
	}
}

// SuggestKey is the key of set closest to a misspelt key (at most two
// edits away), or "".
func SuggestKey(key string, set []Setting) string {
	best, bestDist := "", 3
	for _, s := range set {
		if d := suggest.Distance(key, s.Key); d < bestDist {
			best, bestDist = s.Key, d
		}
	}
	return best
}
