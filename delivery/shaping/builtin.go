package shaping

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// builtinYAML is the embedded provider blocks and reply rules, each with
// the page its reply text comes from.
//
//go:embed builtin.yaml
var builtinYAML []byte

// builtinFile is the form of builtin.yaml.
type builtinFile struct {
	Providers []struct {
		Name       string   `yaml:"name"`
		MXSuffixes []string `yaml:"mx_suffixes"`
	} `yaml:"providers"`
	Rules []struct {
		Name     string `yaml:"name"`
		Provider string `yaml:"provider"`
		Match    string `yaml:"match"`
		Action   string `yaml:"action"`
		Duration string `yaml:"duration"`
		Scope    string `yaml:"scope"`
		Listing  bool   `yaml:"listing"`
	} `yaml:"rules"`
}

var builtinOnce = sync.OnceValues(func() (Config, error) { return parseBuiltin(builtinYAML) })

// builtin returns the parsed embedded configuration (Providers and Rules).
func builtin() (Config, error) { return builtinOnce() }

// Builtin returns the built-in providers and rules, for documentation and
// the admin API.
func Builtin() (Config, error) {
	c, err := builtin()
	if err != nil {
		return Config{}, err
	}
	c.Providers = append([]Provider(nil), c.Providers...)
	c.Rules = append([]Rule(nil), c.Rules...)
	return c, nil
}

func parseBuiltin(data []byte) (Config, error) {
	var f builtinFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return Config{}, fmt.Errorf("shaping: builtin.yaml: %w", err)
	}
	var c Config
	for _, p := range f.Providers {
		c.Providers = append(c.Providers, Provider{Name: p.Name, MXSuffixes: p.MXSuffixes})
	}
	for i, r := range f.Rules {
		a, err := ParseAction(r.Action)
		if err != nil {
			return Config{}, fmt.Errorf("shaping: builtin.yaml: rules[%d] %s: %w", i, r.Name, err)
		}
		k, err := ParseScopeKind(r.Scope)
		if err != nil {
			return Config{}, fmt.Errorf("shaping: builtin.yaml: rules[%d] %s: %w", i, r.Name, err)
		}
		var d time.Duration
		if r.Duration != "" {
			if d, err = time.ParseDuration(r.Duration); err != nil {
				return Config{}, fmt.Errorf("shaping: builtin.yaml: rules[%d] %s: %w", i, r.Name, err)
			}
		}
		c.Rules = append(c.Rules, Rule{Name: "builtin:" + r.Name, Provider: r.Provider, Match: r.Match, Action: a, Duration: d, Scope: k, Listing: r.Listing})
	}
	if err := c.Check(); err != nil {
		return Config{}, fmt.Errorf("shaping: builtin.yaml: %w", err)
	}
	known := map[string]bool{}
	for _, p := range c.Providers {
		known[p.Name] = true
	}
	for _, r := range c.Rules {
		// A listing service's name is quoted by any receiver that uses it,
		// so a listing rule may be for every provider.
		if !known[r.Provider] && !(r.Listing && r.Provider == "") {
			return Config{}, fmt.Errorf("shaping: builtin.yaml: rule %s: unknown provider %q", r.Name, r.Provider)
		}
	}
	return c, nil
}
