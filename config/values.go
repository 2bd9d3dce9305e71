package config

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"
)

// loader reads typed values out of one viper instance and remembers the
// first problem, phrased with where the bad value came from.
type loader struct {
	v        *viper.Viper
	defaults *viper.Viper // the embedded defaults.yaml alone
	file     string       // path given to Load, "" for none
	leaves   map[string]bool
	sections map[string]bool
	read     map[string]bool // leaves decode has asked for
	err      error
}

// fileLabel names the file in messages.
func (l *loader) fileLabel() string {
	if l.file == "" {
		return "(built-in defaults)"
	}
	return l.file
}

// fromEnv reports whether the environment sets key (internal form).
func fromEnv(k string) bool {
	_, ok := os.LookupEnv(envName(k))
	return ok
}

// where names the origin of leaf's value (leaf in dotted form): the
// environment variable when one is set, else the file and the key with
// detail appended (an index "[1]" or a map key ".example.com").
func (l *loader) where(leaf, detail string) string {
	k := strings.ReplaceAll(leaf, ".", delim)
	if l.leaves[k] && fromEnv(k) {
		return "environment " + envName(k)
	}
	return "config " + l.fileLabel() + ": " + leaf + detail
}

// setByUser reports whether key (dotted) comes from the file or environment
// rather than the defaults, to blame the right one of two related keys.
func (l *loader) setByUser(key string) bool {
	k := strings.ReplaceAll(key, ".", delim)
	return fromEnv(k) || l.v.InConfig(k)
}

// failf records the first error, about the value of key (dotted).
func (l *loader) failf(key, format string, args ...any) {
	l.failAt(key, "", format, args...)
}

// failAt records the first error, about a part of leaf's value named by
// detail (see where).
func (l *loader) failAt(leaf, detail, format string, args ...any) {
	if l.err == nil {
		l.err = fmt.Errorf("%s: %w", l.where(leaf, detail), fmt.Errorf(format, args...))
	}
}

// get returns the raw value of a leaf: a string from the environment, or
// what YAML produced (string, int, float64, bool, []any, map) from the file.
func (l *loader) get(key string) any {
	k := strings.ReplaceAll(key, ".", delim)
	if !l.leaves[k] {
		// A programming error: every key decode reads must be in defaults.yaml.
		l.failf(key, "internal error: key is not in defaults.yaml")
		return nil
	}
	l.read[k] = true
	if val := l.v.Get(k); val != nil {
		return val
	}
	return l.defaults.Get(k) // "key: ~" in the file means the default
}

// describe shows a value in an error message the way the user wrote it.
func describe(val any) string {
	switch x := val.(type) {
	case nil:
		return "an empty value"
	case string:
		return strconv.Quote(x)
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "a section of keys"
	default:
		return fmt.Sprint(x)
	}
}

func (l *loader) str(key string) string {
	switch x := l.get(key).(type) {
	case string:
		return x
	case int, int64, uint64, float64, bool:
		// YAML reads 0123, 1e3 or yes-like words as other types; quoting keeps
		// secrets and names exactly as typed.
		l.failf(key, "%s is not a string; put it in quotes", describe(x))
	default:
		l.failf(key, "%s is not a string", describe(x))
	}
	return ""
}

func (l *loader) boolean(key string) bool {
	switch x := l.get(key).(type) {
	case bool:
		return x
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(x))
		if err == nil {
			return b
		}
	}
	l.failf(key, "%s is not true or false", describe(l.get(key)))
	return false
}

// integer accepts whole numbers from YAML and numeric strings from the environment.
func (l *loader) integer(key string) int64 {
	switch x := l.get(key).(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err == nil {
			return n
		}
	}
	l.failf(key, "%s is not a whole number", describe(l.get(key)))
	return 0
}

// intKey is integer for int fields; it refuses what int cannot hold.
func (l *loader) intKey(key string) int {
	n := l.integer(key)
	if n > math.MaxInt || n < math.MinInt {
		l.failf(key, "%d is too large", n)
		return 0
	}
	return int(n)
}

func (l *loader) float(key string) float64 {
	switch x := l.get(key).(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float64:
		return x
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err == nil {
			return f
		}
	}
	l.failf(key, "%s is not a number", describe(l.get(key)))
	return 0
}

// duration parses Go durations ("90s", "1h30m"). A bare number other than
// 0 is refused: decoded naively it would mean nanoseconds.
func (l *loader) duration(key string) time.Duration {
	d, err := durationOf(l.get(key))
	if err != nil {
		l.failf(key, "%w", err)
	}
	return d
}

// durationOf is duration for a value inside a section (shaping rules).
func durationOf(val any) (time.Duration, error) {
	var s string
	switch x := val.(type) {
	case string:
		s = strings.TrimSpace(x)
	case int, int64, uint64, float64:
		s = fmt.Sprint(x)
	default:
		return 0, fmt.Errorf("%s is not a duration (e.g. \"2s\")", describe(val))
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f == 0 {
			return 0, nil
		}
		return 0, fmt.Errorf("%s has no unit; write e.g. \"%ss\" or \"%sm\" (a bare number would mean nanoseconds)", describe(val), s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s is not a duration (e.g. \"2s\")", describe(val))
	}
	return d, nil
}

// strList accepts a YAML list of strings, or one comma-separated string
// (the environment form, also accepted in the file).
func (l *loader) strList(key string) []string {
	out := []string{}
	switch x := l.get(key).(type) {
	case string:
		for _, item := range strings.Split(x, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	case []any:
		for i, item := range x {
			s, ok := item.(string)
			if !ok {
				l.failAt(key, fmt.Sprintf("[%d]", i), "%s is not a string", describe(item))
				return nil
			}
			out = append(out, strings.TrimSpace(s))
		}
	default:
		l.failf(key, "%s is not a list", describe(x))
		return nil
	}
	return out
}

// users reads submission.users: a list of {username, password_hash}
// sections, or "name:hash,name:hash" from the environment.
func (l *loader) users(key string) []User {
	out := []User{}
	for _, p := range l.pairs(key, "username", "password_hash") {
		out = append(out, User{Username: p[0], PasswordHash: p[1], Stream: p[2], Pool: p[3]})
	}
	return out
}

// pairs reads a list of sections {k1, k2, stream, pool} (stream and pool
// optional), or "v1:v2[:stream[:pool]],..." from the environment (bcrypt
// hashes contain neither ':' nor ',').
func (l *loader) pairs(key, k1, k2 string) [][4]string {
	out := [][4]string{}
	switch x := l.get(key).(type) {
	case string:
		for i, item := range strings.Split(x, ",") {
			if item = strings.TrimSpace(item); item == "" {
				continue
			}
			parts := strings.Split(item, ":")
			if len(parts) < 2 || len(parts) > 4 {
				l.failAt(key, fmt.Sprintf("[%d]", i), "%q is not %s:%s, %s:%s:stream or %s:%s:stream:pool", item, k1, k2, k1, k2, k1, k2)
				return nil
			}
			var p [4]string
			copy(p[:], parts)
			out = append(out, p)
		}
	case []any:
		for i, item := range x {
			p, ok := l.pair(key, fmt.Sprintf("[%d]", i), item, k1, k2)
			if !ok {
				return nil
			}
			out = append(out, p)
		}
	default:
		l.failf(key, "%s is not a list of %s/%s sections", describe(x), k1, k2)
		return nil
	}
	return out
}

// pair reads one section of pairs: k1, k2 and an optional stream and
// pool, all strings.
func (l *loader) pair(key, at string, item any, k1, k2 string) ([4]string, bool) {
	var p [4]string
	m, ok := stringMap(item)
	if !ok {
		l.failAt(key, at, "%s is not a section with %s and %s", describe(item), k1, k2)
		return p, false
	}
	for _, k := range sortedKeys(m) {
		s, isStr := m[k].(string)
		switch {
		case k != k1 && k != k2 && k != streamKey && k != poolKey:
			l.failAt(key, at, "unknown key %q", k)
			return p, false
		case !isStr:
			l.failAt(key, at+"."+k, "%s is not a string; put it in quotes", describe(m[k]))
			return p, false
		case k == k1:
			p[0] = s
		case k == k2:
			p[1] = s
		case k == streamKey:
			p[2] = strings.TrimSpace(s)
		default:
			p[3] = strings.TrimSpace(s)
		}
	}
	return p, true
}

// routes reads delivery.routes: a section of domain: host:port, or
// "domain=host:port,..." from the environment. Domains are lower-cased and
// lose a trailing dot, the form delivery looks them up in.
func (l *loader) routes(key string) map[string]string {
	raw := map[string]string{}
	switch x := l.get(key).(type) {
	case string:
		for _, item := range strings.Split(x, ",") {
			if item = strings.TrimSpace(item); item == "" {
				continue
			}
			dom, hop, ok := strings.Cut(item, "=")
			if !ok {
				l.failf(key, "%q is not domain=host:port", item)
				return nil
			}
			raw[strings.TrimSpace(dom)] = strings.TrimSpace(hop)
		}
	default:
		m, ok := stringMap(x)
		if !ok {
			l.failf(key, "%s is not a section of domain: host:port", describe(x))
			return nil
		}
		for dom, hop := range m {
			s, ok := hop.(string)
			if !ok {
				l.failAt(key, "."+dom, "%s is not a host:port string", describe(hop))
				return nil
			}
			raw[dom] = s
		}
	}
	out := make(map[string]string, len(raw))
	for _, dom := range sortedKeys(raw) {
		norm := strings.TrimSuffix(strings.ToLower(dom), ".")
		if _, dup := out[norm]; dup {
			l.failAt(key, "."+dom, "domain %q is listed twice", norm)
			return nil
		}
		out[norm] = raw[dom]
	}
	return out
}

// stringMap accepts both map forms a YAML decoder produces.
func stringMap(val any) (map[string]any, bool) {
	switch m := val.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[strings.ToLower(fmt.Sprint(k))] = v
		}
		return out, true
	}
	return nil, false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
