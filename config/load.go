package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/relayq/relayq/internal/suggest"
	"github.com/spf13/viper"
)

// defaultsYAML is the built-in configuration and the annotated example
// config. Its keys are the complete set of keys Load accepts.
//
//go:embed defaults.yaml
var defaultsYAML []byte

// delim separates key parts inside viper. It is not "." so that map keys
// holding domain names (delivery.routes: example.com) stay whole.
const delim = "::"

// envPrefix starts every environment variable Load reads.
const envPrefix = "RELAYQ"

// mapLeaves are keys whose value is a map with user-chosen keys; everything
// below them belongs to the value, not to the key schema.
var mapLeaves = map[string]bool{"delivery::routes": true, "shaping::domains": true}

// Load builds the configuration from the embedded defaults, then the YAML
// file at path (skipped when path is ""), then RELAYQ_* environment
// variables, and validates the result. The error is one line naming the file
// and key, or the environment variable, that is wrong.
func Load(path string) (*Config, error) {
	c, _, err := load(path)
	return c, err
}

// load is Load that also returns the loader, which knows where each value
// came from (see Settings).
func load(path string) (*Config, *loader, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	l, err := newLoader(path, data)
	if err != nil {
		return nil, nil, err
	}
	l.checkKeys()
	if l.err != nil {
		return nil, nil, l.err
	}
	c := l.decode()
	if l.err != nil {
		return nil, nil, l.err
	}
	l.validate(c)
	if l.err != nil {
		return nil, nil, l.err
	}
	if c.Hostname == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			return nil, nil, fmt.Errorf("%s: empty and the system host name is unknown (%v); set it", l.where("hostname", ""), err)
		}
		c.Hostname = host
	}
	return c, l, nil
}

// readFile reads the configuration file, nil for path "".
func readFile(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already at the front of the message
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return b, nil
}

// newLoader prepares one viper instance for one load (never the global one)
// with every default set, so that environment variables are seen for every
// key, and the file's contents read in.
func newLoader(path string, data []byte) (*loader, error) {
	dv, err := parseYAML(defaultsYAML)
	if err != nil {
		return nil, fmt.Errorf("config: embedded defaults.yaml: %w", err)
	}
	l := &loader{
		file:     path,
		defaults: dv,
		leaves:   map[string]bool{},
		sections: map[string]bool{},
		read:     map[string]bool{},
	}
	for _, k := range dv.AllKeys() {
		l.leaves[k] = true
	}
	for k := range mapLeaves {
		l.leaves[k] = true
	}
	for k := range l.leaves {
		parts := strings.Split(k, delim)
		for i := 1; i < len(parts); i++ {
			l.sections[strings.Join(parts[:i], delim)] = true
		}
	}

	v := viper.NewWithOptions(
		viper.KeyDelimiter(delim),
		viper.EnvKeyReplacer(strings.NewReplacer(delim, "_")),
	)
	v.SetConfigType("yaml")
	v.SetEnvPrefix(envPrefix)
	v.AutomaticEnv()
	// A set but empty variable is a value: it is how to empty a list or
	// turn off admin.listen from the environment.
	v.AllowEmptyEnv(true)
	for k := range l.leaves {
		v.SetDefault(k, dv.Get(k))
	}
	if data != nil {
		if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("config %s: %s", path, oneLine(unwrapParseError(err)))
		}
	}
	l.v = v
	return l, nil
}

// parseYAML reads YAML bytes into a fresh viper instance.
func parseYAML(data []byte) (*viper.Viper, error) {
	v := viper.NewWithOptions(viper.KeyDelimiter(delim))
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		return nil, unwrapParseError(err)
	}
	return v, nil
}

// unwrapParseError drops viper's "While parsing config:" wrapper, which
// would repeat what the "config FILE:" prefix already says.
func unwrapParseError(err error) error {
	var pe viper.ConfigParseError
	if errors.As(err, &pe) {
		if inner := pe.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

// oneLine joins a multi-line message (yaml lists several problems on
// separate lines) so that every error Load returns is one line.
func oneLine(err error) string {
	f := strings.Fields(strings.ReplaceAll(err.Error(), "\n", " "))
	return strings.Join(f, " ")
}

// checkKeys refuses keys that are not in defaults.yaml and sections given
// as scalars. Sorting makes the reported error the same on every run.
// viper lists no key for an empty section, so a misspelt "sumbission: {}"
// passes; it sets nothing, so nothing is lost.
func (l *loader) checkKeys() {
	// viper treats a variable named after a section as a value that hides
	// every key below it, so RELAYQ_DELIVERY_SMARTHOST=host:25 would
	// silently reset the file's whole smarthost section to defaults.
	for _, sec := range sortedKeys(l.sections) {
		if name := envName(sec); fromEnv(sec) {
			l.err = fmt.Errorf("environment %s: %q is a section, not a key; set the variables of its keys instead (%s_...)", name, dotted(sec), name)
			return
		}
	}
	if l.checkEnvNames(); l.err != nil {
		return
	}
	keys := l.v.AllKeys()
	sort.Strings(keys)
	var unknown []string
	seen := map[string]bool{}
	for _, k := range keys {
		if l.leaves[k] {
			continue
		}
		if l.sections[k] {
			// "retry: ~" reads as the default section, which is fine.
			if val := l.v.Get(k); !isMap(val) {
				l.failf(dotted(k), "%s is not a section; want keys below it", describe(val))
			}
			continue
		}
		parts := strings.Split(k, delim)
		for i := 1; i <= len(parts); i++ {
			p := strings.Join(parts[:i], delim)
			if l.leaves[p] {
				break // below a value: the value's own check reports it
			}
			if !l.sections[p] {
				if !seen[p] {
					seen[p] = true
					unknown = append(unknown, p)
				}
				break
			}
		}
	}
	if len(unknown) == 0 || l.err != nil {
		return
	}
	quoted := make([]string, len(unknown))
	for i, k := range unknown {
		quoted[i] = fmt.Sprintf("%q", dotted(k))
	}
	msg := "unknown key " + quoted[0]
	if len(quoted) > 1 {
		msg = "unknown keys " + strings.Join(quoted, ", ")
	} else if s := l.suggest(unknown[0]); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", dotted(s))
	}
	l.err = fmt.Errorf("config %s: %s", l.fileLabel(), msg)
}

// suggest returns the known key closest to a misspelt one, or "".
func (l *loader) suggest(k string) string {
	best, bestDist := "", 3 // more than two edits is a different word
	for _, set := range []map[string]bool{l.leaves, l.sections} {
		for cand := range set {
			if d := suggest.Distance(k, cand); d < bestDist || (d == bestDist && cand < best) {
				best, bestDist = cand, d
			}
		}
	}
	return best
}

// dotted turns an internal key into the form users write: retry.max_delay.
func dotted(k string) string { return strings.ReplaceAll(k, delim, ".") }

// envName is the environment variable that overrides key (internal form).
func envName(k string) string {
	return envPrefix + "_" + strings.ToUpper(strings.ReplaceAll(k, delim, "_"))
}

func isMap(val any) bool {
	_, ok := stringMap(val)
	return ok
}
