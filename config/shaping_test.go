package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
)

// load writes file (when not "") and loads it with env set.
func loadWith(t *testing.T, file string, env map[string]string) (*Config, string, error) {
	t.Helper()
	clearEnv(t)
	for k, v := range env {
		t.Setenv(k, v)
	}
	path := ""
	if file != "" {
		path = writeFile(t, t.TempDir(), "relayq.yaml", file)
	}
	c, err := Load(path)
	return c, path, err
}

func TestShapingSettings(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		env   map[string]string
		check func(*Config) any
		want  any
	}{
		{
			name:  "the deprecated key still sets the connection limit",
			file:  "delivery:\n  max_conns_per_domain: 4\n",
			check: func(c *Config) any { return [2]int{c.Shaping.Defaults.MaxConnections, c.Delivery.MaxConnsPerDomain} },
			want:  [2]int{4, 4},
		},
		{
			name:  "the new key reaches the engine's old field too",
			file:  "shaping:\n  defaults:\n    max_connections: 6\n",
			check: func(c *Config) any { return [2]int{c.Shaping.Defaults.MaxConnections, c.Delivery.MaxConnsPerDomain} },
			want:  [2]int{6, 6},
		},
		{
			name:  "both keys, same value",
			file:  "delivery:\n  max_conns_per_domain: 3\nshaping:\n  defaults:\n    max_connections: 3\n",
			check: func(c *Config) any { return c.Shaping.Defaults.MaxConnections },
			want:  3,
		},
		{
			name:  "the deprecated key from the environment",
			env:   map[string]string{"RELAYQ_DELIVERY_MAX_CONNS_PER_DOMAIN": "7"},
			check: func(c *Config) any { return c.Shaping.Defaults.MaxConnections },
			want:  7,
		},
		{
			name:  "rate and builtin from the environment",
			env:   map[string]string{"RELAYQ_SHAPING_DEFAULTS_MAX_MESSAGE_RATE": "50/min", "RELAYQ_SHAPING_BUILTIN": "false"},
			check: func(c *Config) any { return [2]any{c.Shaping.Defaults.MaxMessageRate, c.Shaping.Builtin} },
			want:  [2]any{shaping.Rate{N: 50, Per: time.Minute}, false},
		},
		{
			name:  "rules from the environment, as YAML",
			env:   map[string]string{"RELAYQ_SHAPING_RULES": `[{match: '4\.7\.28', action: suspend, duration: 10m, scope: domain}]`},
			check: func(c *Config) any { return c.Shaping.Rules },
			want:  []shaping.Rule{{Match: `4\.7\.28`, Action: shaping.ActionSuspend, Duration: 10 * time.Minute, Scope: shaping.ScopeDomain}},
		},
		{
			name:  "domains from the environment, as YAML",
			env:   map[string]string{"RELAYQ_SHAPING_DOMAINS": `{Example.NET: {max_connections: 2}}`},
			check: func(c *Config) any { return c.Shaping.Domains },
			want:  map[string]shaping.Limits{"example.net": {MaxConnections: 2}},
		},
		{
			name:  "an empty domain entry is allowed (defaults apply)",
			file:  "shaping:\n  domains:\n    example.net:\n",
			check: func(c *Config) any { return c.Shaping.Domains },
			want:  map[string]shaping.Limits{"example.net": {}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := loadWith(t, tt.file, tt.env)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := tt.check(c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
			if _, err := shaping.NewPolicy(c.Shaping); err != nil {
				t.Errorf("shaping.NewPolicy refuses what Load accepted: %v", err)
			}
		})
	}
}

// The default configuration builds a policy with the built-in rules.
func TestDefaultShapingPolicy(t *testing.T) {
	p, err := shaping.NewPolicy(Default().Shaping)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Resolve("gmail.com", []string{"gmail-smtp-in.l.google.com"}).Primary().String(); got != "provider:google" {
		t.Errorf("gmail.com resolves to %s on the defaults", got)
	}
}

func TestShapingRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  map[string]string
		want string
	}{
		{"bad rate", "shaping:\n  defaults:\n    max_message_rate: 10/sec\n",
			nil, `config $FILE: shaping.defaults.max_message_rate: "10/sec": unit "sec" is not s, min or h`},
		{"rate without unit", "shaping:\n  domains:\n    example.net: {max_message_rate: \"10\"}\n",
			nil, `config $FILE: shaping.domains.example.net.max_message_rate: "10" is not a rate; write N/s, N/min or N/h, e.g. "10/s" ("" for no limit)`},
		{"zero connections in an entry", "shaping:\n  domains:\n    example.net: {max_connections: 0}\n",
			nil, `config $FILE: shaping.domains.example.net.max_connections: 0 must be a whole number of at least 1 (leave the key out to use shaping.defaults)`},
		{"zero connections in defaults", "shaping:\n  defaults:\n    max_connections: 0\n",
			nil, `config $FILE: shaping.defaults.max_connections: 0 must be at least 1`},
		{"zero per connection", "shaping:\n  defaults:\n    max_messages_per_connection: 0\n",
			nil, `config $FILE: shaping.defaults.max_messages_per_connection: 0 must be at least 1`},
		{"both connection keys, different values", "delivery:\n  max_conns_per_domain: 5\nshaping:\n  defaults:\n    max_connections: 20\n",
			nil, `config $FILE: delivery.max_conns_per_domain: deprecated and replaced by shaping.defaults.max_connections, which is also set (20, here 5); keep only shaping.defaults.max_connections`},
		{"unknown key in a rule", "shaping:\n  rules:\n    - {match: x, action: bounce, scop: domain}\n",
			nil, `config $FILE: shaping.rules[0]: unknown key "scop" (want match, action, duration, scope)`},
		{"bad action", "shaping:\n  rules:\n    - {match: x, action: pause, duration: 1m}\n",
			nil, `config $FILE: shaping.rules[0].action: "pause" is not suspend, throttle, bounce or slow`},
		{"missing action", "shaping:\n  rules:\n    - {match: x}\n",
			nil, `config $FILE: shaping.rules[0].action: missing; want suspend, throttle, bounce or slow`},
		{"bad scope", "shaping:\n  rules:\n    - {match: x, action: bounce, scope: world}\n",
			nil, `config $FILE: shaping.rules[0].scope: "world" is not provider or domain`},
		{"bare-number duration", "shaping:\n  rules:\n    - {match: x, action: suspend, duration: 600}\n",
			nil, `config $FILE: shaping.rules[0].duration: 600 has no unit; write e.g. "600s" or "600m" (a bare number would mean nanoseconds)`},
		{"suspend without duration", "shaping:\n  rules:\n    - {match: x, action: suspend}\n",
			nil, `config $FILE: shaping.rules[0].duration: 0s: a suspend rule needs a duration of more than 0`},
		{"bad regexp", "shaping:\n  rules:\n    - {match: x, action: bounce}\n    - {match: '4\\.7\\.(28', action: bounce}\n",
			nil, `config $FILE: shaping.rules[1].match: "4\\.7\\.(28" is not an RE2 regular expression: missing closing )`},
		{"bad regexp part", "shaping:\n  rules:\n    - {match: 'a{2,1}', action: bounce}\n",
			nil, "config $FILE: shaping.rules[0].match: \"a{2,1}\" is not an RE2 regular expression: invalid repeat count: `{2,1}`"},
		{"rule is not a section", "shaping:\n  rules: [suspend]\n",
			nil, `config $FILE: shaping.rules[0]: "suspend" is not a section of rule keys`},
		{"rules is not a list", "shaping:\n  rules: {match: x}\n",
			nil, `config $FILE: shaping.rules: a section of keys is not a list of rule`},
		{"provider without suffixes", "shaping:\n  providers:\n    - {name: google}\n",
			nil, `config $FILE: shaping.providers[0].mx_suffixes: empty: the provider "google" would match no destination`},
		{"provider name", "shaping:\n  providers:\n    - {name: Big Mail, mx_suffixes: [.big.example]}\n",
			nil, `config $FILE: shaping.providers[0].name: "Big Mail" is not a provider name (lower-case letters, digits, '-' and '_')`},
		{"provider twice", "shaping:\n  providers:\n    - {name: a, mx_suffixes: [.a.example]}\n    - {name: a, mx_suffixes: [.b.example]}\n",
			nil, `config $FILE: shaping.providers[1].name: "a" is listed twice`},
		{"bad suffix", "shaping:\n  providers:\n    - {name: a, mx_suffixes: [\"mx .a.example\"]}\n",
			nil, `config $FILE: shaping.providers[0].mx_suffixes[0]: "mx .a.example" is not a host name suffix such as ".google.com"`},
		{"bad domain key", "shaping:\n  domains:\n    \"exa mple.net\": {max_connections: 2}\n",
			nil, `config $FILE: shaping.domains.exa mple.net: "exa mple.net" is not a domain name or "*"`},
		{"domain twice", "shaping:\n  domains:\n    example.net: {}\n    example.net.: {}\n",
			nil, `config $FILE: shaping.domains.example.net.: domain "example.net" is listed twice`},
		{"unknown key in a domain", "shaping:\n  domains:\n    example.net: {max_rate: 1/s}\n",
			nil, `config $FILE: shaping.domains.example.net: unknown key "max_rate" (want adaptive, max_connections, max_message_rate, max_messages_per_connection)`},
		{"environment: bad rate", "", map[string]string{"RELAYQ_SHAPING_DEFAULTS_MAX_MESSAGE_RATE": "fast"},
			`environment RELAYQ_SHAPING_DEFAULTS_MAX_MESSAGE_RATE: "fast" is not a rate; write N/s, N/min or N/h, e.g. "10/s" ("" for no limit)`},
		{"environment: rules not YAML", "", map[string]string{"RELAYQ_SHAPING_RULES": "[{match: x"},
			`environment RELAYQ_SHAPING_RULES: not YAML: yaml: line 1: did not find expected ',' or '}'`},
		{"environment: both connection keys", "", map[string]string{"RELAYQ_DELIVERY_MAX_CONNS_PER_DOMAIN": "5", "RELAYQ_SHAPING_DEFAULTS_MAX_CONNECTIONS": "6"},
			`environment RELAYQ_DELIVERY_MAX_CONNS_PER_DOMAIN: deprecated and replaced by shaping.defaults.max_connections, which is also set (6, here 5); keep only shaping.defaults.max_connections`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, path, err := loadWith(t, tt.file, tt.env)
			if err == nil {
				t.Fatalf("Load succeeded with %+v; want an error", c.Shaping)
			}
			want := strings.ReplaceAll(tt.want, "$FILE", path)
			if err.Error() != want {
				t.Errorf("error\n got: %s\nwant: %s", err, want)
			}
		})
	}
}
