package config

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/delivery/shaping"
)

const (
	aliceHash = "$2a$04$duY2s0FjO5AMXwFrY9Q3Qe/.QAOh0jcEhu.TArIVUJq75HI5wRbni"
	bobHash   = "$2y$04$eHNPWpNmQ8JaBR/TEDyKSuzUZhxqF/E87xIERzfxNfBcvf.aT9fp."
)

func TestLoadWithoutFileGivesDefaults(t *testing.T) {
	clearEnv(t)
	got, err := Load("")
	if err != nil {
		t.Fatalf("Load(\"\"): %v", err)
	}
	if want := Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("Load(\"\") =\n%+v\nwant Default() =\n%+v", got, want)
	}
	if got.Hostname == "" {
		t.Error("Hostname is empty; want the system host name")
	}
}

// The embedded defaults.yaml is also the example config users copy: loaded
// as a file it must give exactly Default().
func TestDefaultsYAMLAsFileEqualsDefault(t *testing.T) {
	clearEnv(t)
	path := writeFile(t, t.TempDir(), "relayq.yaml", string(defaultsYAML))
	got, err := Load(path)
	if err != nil {
		t.Fatalf("Load(defaults.yaml copy): %v", err)
	}
	want := Default()
	want.File = path
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestLoadFullFile(t *testing.T) {
	clearEnv(t)
	path, err := filepath.Abs("../testdata/config/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeKeyPair(t, dir)
	t.Chdir(dir) // full.yaml names cert.pem and key.pem relative to the working directory

	got, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := &Config{
		Hostname:        "mail.example.net",
		ShutdownTimeout: 45 * time.Second,
		Submission: Submission{
			Listen:    []string{"127.0.0.1:2587", "[::1]:2587"},
			TLSListen: []string{"127.0.0.1:2465"},
			TLS:       TLSFiles{CertFile: "cert.pem", KeyFile: "key.pem"},
			TrustedNetworks: []netip.Prefix{
				netip.MustParsePrefix("10.0.0.0/8"),
				netip.MustParsePrefix("192.0.2.7/32"),
				netip.MustParsePrefix("2001:db8::/32"),
				netip.MustParsePrefix("10.1.0.0/16"), // host bits masked
			},
			Users: []User{
				{Username: "alice", PasswordHash: aliceHash},
				{Username: "bob", PasswordHash: bobHash},
			},
			HTTPListen:          "127.0.0.1:8587",
			APIKeys:             []APIKey{{Name: "billing", KeyHash: aliceHash}},
			AllowInsecureAuth:   true,
			MaxMessageBytes:     10 << 20,
			MaxRecipients:       500,
			MaxConnections:      200,
			MaxConnectionsPerIP: 20,
			ReadTimeout:         2 * time.Minute,
			DataTimeout:         20 * time.Minute,
			SessionTimeout:      time.Hour,
			AuthMaxFailures:     3,
			AuthLockout:         15 * time.Minute,
		},
		Queue: Queue{Path: "/var/lib/relayq/queue.db"},
		Admin: Admin{Listen: "127.0.0.1:9025", Token: "s3cret-token", AllowedHosts: []string{"relay1.example.net", "relayq-a:9025"}},
		Retry: Retry{
			InitialDelay: 30 * time.Second,
			Multiplier:   1.5,
			Jitter:       5 * time.Second,
			MaxDelay:     time.Hour,
			MaxAttempts:  20,
			MaxAge:       120 * time.Hour,
			WarnAfter:    4 * time.Hour,
		},
		Delivery: Delivery{
			Workers:           8,
			MaxConnsPerDomain: 2,
			Routes: map[string]string{
				"example.com":      "127.0.0.1:25",
				"mail.example.org": "[::1]:2525",
				"*":                "127.0.0.1:2526",
			},
			Smarthost: Smarthost{
				Address:           "127.0.0.1:587",
				Fallback:          []string{"127.0.0.2:587", "127.0.0.3:587"},
				Username:          "relay-user",
				Password:          "relay pass",
				TLS:               SmarthostTLSImplicit,
				AllowInsecureAuth: true,
			},
			DNSServer:       "127.0.0.1:5353",
			TLS:             DeliveryTLSRequired,
			ConnectTimeout:  10 * time.Second,
			CommandTimeout:  2 * time.Minute,
			GreetingTimeout: time.Minute,
			MTASTS:          MTASTSEnforce,
		},
		Shaping: shaping.Config{
			Defaults: shaping.Limits{MaxConnections: 2, MaxMessageRate: shaping.Rate{N: 100, Per: time.Second}, MaxMessagesPerConnection: 50},
			Providers: []shaping.Provider{
				{Name: "google", MXSuffixes: []string{".google.com", ".googlemail.com"}, Limits: shaping.Limits{MaxConnections: 20, MaxMessageRate: shaping.Rate{N: 600, Per: time.Minute}}},
				{Name: "corp", MXSuffixes: []string{"mx.corp.example"}, Limits: shaping.Limits{MaxMessagesPerConnection: 5}},
			},
			Domains: map[string]shaping.Limits{
				"example.net": {MaxConnections: 2, MaxMessageRate: shaping.Rate{N: 10, Per: time.Second}},
				"*":           {MaxMessageRate: shaping.Rate{N: 1000, Per: time.Hour}},
			},
			Rules: []shaping.Rule{
				{Match: `4\.7\.28|rate limit|too many (messages|connections)`, Action: shaping.ActionSuspend, Duration: 10 * time.Minute, Scope: shaping.ScopeProvider},
				{Match: `4\.7\.0 .*temporarily deferred`, Action: shaping.ActionThrottle, Duration: 30 * time.Minute, Scope: shaping.ScopeProvider},
				{Match: "mailbox does not exist", Action: shaping.ActionBounce, Scope: shaping.ScopeDomain},
			},
		},
		DKIM:    DKIM{Keys: []DKIMKey{}, Headers: []string{}},
		Cluster: Cluster{RedisURL: "rediss://:cluster-pass@127.0.0.1:6380/2", NodeName: "relay-1", ExpectedNodes: 3},
		Log:     Log{Format: "json", Level: "debug"},
		Events: Events{Retention: 72 * time.Hour, Webhooks: []Webhook{
			{URL: "https://app.example.org/hooks/relayq", Secret: "hook secret", Types: []string{"bounced", "expired"}, Batch: 10},
			{URL: "http://127.0.0.1:9000/h", Secret: "s2", Types: []string{}, Batch: 100},
		}},
		Suppression: Suppression{Codes: []string{"5.7.1"}, Expire: 720 * time.Hour, ExemptAuthenticated: true, ExemptTrusted: true},
		File:        path,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
	// Every field differs from its default, so the file really exercises
	// every key rather than passing because defaults filled the gaps.
	if d := Default(); reflect.DeepEqual(got.Submission.TLS, d.Submission.TLS) || got.Log == d.Log {
		t.Error("full.yaml leaves keys at their defaults")
	}
}

// Domain names as map keys must survive whole: viper's default "." key
// delimiter would turn example.com into a nested section.
func TestRouteDomainKeysKeepTheirDots(t *testing.T) {
	clearEnv(t)
	path := writeFile(t, t.TempDir(), "relayq.yaml", `
delivery:
  routes:
    example.com: 127.0.0.1:25
    sub.Example.CO.uk.: 127.0.0.1:26
    "*": localhost:2525
`)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"example.com":       "127.0.0.1:25",
		"sub.example.co.uk": "127.0.0.1:26",
		"*":                 "localhost:2525",
	}
	if !reflect.DeepEqual(c.Delivery.Routes, want) {
		t.Errorf("routes = %v, want %v", c.Delivery.Routes, want)
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	tests := []struct {
		name  string
		file  string // YAML, or "" for no file
		env   map[string]string
		check func(*Config) any // returns the observed value
		want  any
	}{
		{
			name:  "list is comma separated",
			env:   map[string]string{"RELAYQ_SUBMISSION_LISTEN": "127.0.0.1:2526, 127.0.0.1:2527"},
			check: func(c *Config) any { return c.Submission.Listen },
			want:  []string{"127.0.0.1:2526", "127.0.0.1:2527"},
		},
		{
			name:  "duration",
			env:   map[string]string{"RELAYQ_RETRY_INITIAL_DELAY": "5s"},
			check: func(c *Config) any { return c.Retry.InitialDelay },
			want:  5 * time.Second,
		},
		{
			name:  "environment wins over the file",
			file:  "retry:\n  max_age: 48h\n",
			env:   map[string]string{"RELAYQ_RETRY_MAX_AGE": "72h"},
			check: func(c *Config) any { return c.Retry.MaxAge },
			want:  72 * time.Hour,
		},
		{
			name:  "file wins over defaults when no variable is set",
			file:  "retry:\n  max_age: 48h\n",
			check: func(c *Config) any { return c.Retry.MaxAge },
			want:  48 * time.Hour,
		},
		{
			name:  "set but empty variable empties the key",
			env:   map[string]string{"RELAYQ_ADMIN_LISTEN": ""},
			check: func(c *Config) any { return c.Admin.Listen },
			want:  "",
		},
		{
			name:  "empty list",
			env:   map[string]string{"RELAYQ_SUBMISSION_TRUSTED_NETWORKS": ""},
			check: func(c *Config) any { return c.Submission.TrustedNetworks },
			want:  []netip.Prefix{},
		},
		{
			name: "integer, float and bool",
			env:  map[string]string{"RELAYQ_DELIVERY_WORKERS": "4", "RELAYQ_RETRY_MULTIPLIER": "1.5", "RELAYQ_SUBMISSION_ALLOW_INSECURE_AUTH": "true"},
			check: func(c *Config) any {
				return []any{c.Delivery.Workers, c.Retry.Multiplier, c.Submission.AllowInsecureAuth}
			},
			want: []any{4, 1.5, true},
		},
		{
			name:  "routes",
			env:   map[string]string{"RELAYQ_DELIVERY_ROUTES": "Example.com=127.0.0.1:25, *=127.0.0.1:26"},
			check: func(c *Config) any { return c.Delivery.Routes },
			want:  map[string]string{"example.com": "127.0.0.1:25", "*": "127.0.0.1:26"},
		},
		{
			name: "users",
			env: map[string]string{
				"RELAYQ_SUBMISSION_USERS":               "alice:" + aliceHash + ",bob:" + bobHash,
				"RELAYQ_SUBMISSION_ALLOW_INSECURE_AUTH": "1",
			},
			check: func(c *Config) any { return c.Submission.Users },
			want:  []User{{"alice", aliceHash}, {"bob", bobHash}},
		},
		{
			name:  "nested smarthost key",
			env:   map[string]string{"RELAYQ_DELIVERY_SMARTHOST_ADDRESS": "127.0.0.1:587", "RELAYQ_DELIVERY_SMARTHOST_TLS": "IMPLICIT"},
			check: func(c *Config) any { return c.Delivery.Smarthost },
			want:  Smarthost{Address: "127.0.0.1:587", Fallback: []string{}, TLS: SmarthostTLSImplicit},
		},
		{
			name:  "hostname",
			env:   map[string]string{"RELAYQ_HOSTNAME": "relay.example.org"},
			check: func(c *Config) any { return c.Hostname },
			want:  "relay.example.org",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			path := ""
			if tt.file != "" {
				path = writeFile(t, t.TempDir(), "relayq.yaml", tt.file)
			}
			c, err := Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := tt.check(c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// Each kind of mistake must stop Load with one line that names the file
// and key (or the environment variable) and says what is wrong. In want,
// $FILE is the config file and $DIR its directory, which holds cert.pem,
// key.pem (a matching pair) and other-key.pem (a key of another pair).
func TestLoadRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  map[string]string
		want string // the whole message, or with wantPrefix only its start
		// wantPrefix: want is a prefix, because the rest comes from a library.
		wantPrefix bool
	}{
		{
			name: "unknown key",
			file: "submission:\n  lisen: [\"127.0.0.1:25\"]\n",
			want: `config $FILE: unknown key "submission.lisen" (did you mean "submission.listen"?)`,
		},
		{
			name: "misspelt environment variable",
			env:  map[string]string{"RELAYQ_RETRY_MAX_DELAYS": "10m"},
			want: `environment RELAYQ_RETRY_MAX_DELAYS: not a relayq setting (did you mean RELAYQ_RETRY_MAX_DELAY?)`,
		},
		{
			name: "environment variable far from any key",
			env:  map[string]string{"RELAYQ_COLOUR": "blue", "RELAYQ_SUBMISION_LISTEN": "x"},
			want: `environment RELAYQ_COLOUR: not a relayq setting (every key's variable is RELAYQ_ plus the key in capitals, dots as underscores, e.g. RELAYQ_RETRY_MAX_DELAY); also unknown: RELAYQ_SUBMISION_LISTEN`,
		},
		{
			name: "read token without token",
			file: "admin:\n  read_token: r\n",
			want: `config $FILE: admin.read_token: set, but admin.token is empty: without admin.token every request is allowed, so a read-only token restricts nothing`,
		},
		{
			name: "read token equal to token",
			env:  map[string]string{"RELAYQ_ADMIN_TOKEN": "t", "RELAYQ_ADMIN_READ_TOKEN": "t"},
			want: `environment RELAYQ_ADMIN_READ_TOKEN: is the same as admin.token: give monitoring a token of its own`,
		},
		{
			name: "allowed host that is an IP address",
			file: "admin:\n  allowed_hosts: [relay.example.net, \"10.0.0.5:8025\"]\n",
			want: `config $FILE: admin.allowed_hosts[1]: "10.0.0.5:8025" is not a host name or host:port (e.g. relay.example.net or relay.example.net:8025): IP addresses are always allowed; list host names only`,
		},
		{
			name: "allowed host with a bad port",
			env:  map[string]string{"RELAYQ_ADMIN_ALLOWED_HOSTS": "relay.example.net:http"},
			want: `environment RELAYQ_ADMIN_ALLOWED_HOSTS: "relay.example.net:http" is not a host name or host:port (e.g. relay.example.net or relay.example.net:8025): port "http" is not a number from 1 to 65535`,
		},
		{
			name: "allowed host wildcard",
			file: "admin:\n  allowed_hosts: [\"*\"]\n",
			want: `config $FILE: admin.allowed_hosts[0]: "*" is not a host name or host:port (e.g. relay.example.net or relay.example.net:8025): bad host name "*"`,
		},
		{
			name: "unknown section",
			file: "smtp:\n  listen: x\nlogging:\n  level: debug\n",
			want: `config $FILE: unknown keys "logging", "smtp"`,
		},
		{
			name: "wrong type: string for a number",
			file: "submission:\n  max_recipients: lots\n",
			want: `config $FILE: submission.max_recipients: "lots" is not a whole number`,
		},
		{
			name: "wrong type: fraction for a number",
			file: "delivery:\n  workers: 2.5\n",
			want: `config $FILE: delivery.workers: 2.5 is not a whole number`,
		},
		{
			name: "wrong type: section for a list",
			file: "submission:\n  listen: {a: b}\n",
			want: `config $FILE: submission.listen: a section of keys is not a list`,
		},
		{
			name: "wrong type: bool",
			file: "submission:\n  allow_insecure_auth: maybe\n",
			want: `config $FILE: submission.allow_insecure_auth: "maybe" is not true or false`,
		},
		{
			name: "wrong type: number for a string",
			file: "admin:\n  token: 0123\n",
			want: `config $FILE: admin.token: 83 is not a string; put it in quotes`,
		},
		{
			name: "wrong type: scalar for a section",
			file: "retry: 5\n",
			want: `config $FILE: retry: 5 is not a section; want keys below it`,
		},
		{
			name: "bad duration",
			file: "retry:\n  initial_delay: abc\n",
			want: `config $FILE: retry.initial_delay: "abc" is not a duration (e.g. "2s")`,
		},
		{
			name: "bare-number duration",
			file: "retry:\n  max_age: 3600\n",
			want: `config $FILE: retry.max_age: 3600 has no unit; write e.g. "3600s" or "3600m" (a bare number would mean nanoseconds)`,
		},
		{
			name: "negative duration",
			file: "submission:\n  read_timeout: -5m\n",
			want: `config $FILE: submission.read_timeout: -5m0s must be more than 0`,
		},
		{
			name: "max_delay below initial_delay blames the key the user set",
			file: "retry:\n  initial_delay: 2m\n",
			want: `config $FILE: retry.initial_delay: retry.max_delay (1m4s) is less than retry.initial_delay (2m0s)`,
		},
		{
			name: "multiplier below 1",
			file: "retry:\n  multiplier: 0.5\n",
			want: `config $FILE: retry.multiplier: 0.5 must be a number of at least 1 (1 retries at a fixed interval)`,
		},
		{
			name: "bad CIDR",
			file: "submission:\n  trusted_networks: [\"10.0.0.0/8\", \"10.0.0.0/33\"]\n",
			want: `config $FILE: submission.trusted_networks[1]: "10.0.0.0/33" is not a network such as 10.0.0.0/8 or 192.0.2.1`,
		},
		{
			name: "bad listen host:port",
			file: "submission:\n  listen: [\"127.0.0.1\"]\n",
			want: `config $FILE: submission.listen[0]: "127.0.0.1" is not host:port (e.g. 127.0.0.1:2525): address 127.0.0.1: missing port in address`,
		},
		{
			name: "route without port",
			file: "delivery:\n  routes:\n    example.com: mx.example.com\n",
			want: `config $FILE: delivery.routes.example.com: "mx.example.com" is not host:port (e.g. mx.example.net:25): address mx.example.com: missing port in address`,
		},
		{
			name: "smarthost port not numeric",
			file: "delivery:\n  smarthost:\n    address: 127.0.0.1:smtp\n",
			want: `config $FILE: delivery.smarthost.address: "127.0.0.1:smtp" is not host:port (e.g. mx.example.net:25): port "smtp" is not a number from 1 to 65535`,
		},
		{
			name: "dns server port out of range",
			file: "delivery:\n  dns_server: 127.0.0.1:99999\n",
			want: `config $FILE: delivery.dns_server: "127.0.0.1:99999" is not host:port (e.g. mx.example.net:25): port "99999" is not a number from 1 to 65535`,
		},
		{
			name: "bad enum",
			file: "delivery:\n  tls: always\n",
			want: `config $FILE: delivery.tls: "always" is not one of opportunistic, required, none`,
		},
		{
			name: "bad mta_sts mode",
			file: "delivery:\n  mta_sts: strict\n",
			want: `config $FILE: delivery.mta_sts: "strict" is not one of enforce, testing, off`,
		},
		{
			name: "mta_sts root CA file missing",
			file: "delivery:\n  mta_sts_root_ca_file: /nonexistent/ca.pem\n",
			want: `config $FILE: delivery.mta_sts_root_ca_file: open /nonexistent/ca.pem: no such file or directory`,
		},
		{
			name: "dane without a loopback resolver",
			file: "delivery:\n  dane: true\n  dns_server: 192.0.2.53:53\n",
			want: `config $FILE: delivery.dane: true needs delivery.dns_server set to a DNSSEC-validating resolver on a loopback address (e.g. 127.0.0.1:53), not "192.0.2.53:53": only its AD bit can be trusted`,
		},
		{
			name: "webhook without secret",
			file: "events:\n  webhooks:\n    - url: https://app.example.org/h\n",
			want: `config $FILE: events.webhooks[0].secret: empty: the receiver could not tell relayq's requests from anyone's`,
		},
		{
			name: "webhook with a bad URL",
			file: "events:\n  webhooks:\n    - {url: 'ftp://x', secret: s}\n",
			want: `config $FILE: events.webhooks[0].url: "ftp://x" is not an http:// or https:// URL`,
		},
		{
			name: "webhook with an unknown event type",
			file: "events:\n  webhooks:\n    - {url: 'https://x/h', secret: s, types: [sent]}\n",
			want: `config $FILE: events.webhooks[0].types[0]: "sent" is not an event type (queued, delivered, deferred, bounced, expired, delayed, suppressed, dsn_sent)`,
		},
		{
			name: "zero retention",
			file: "events:\n  retention: 0\n",
			want: `config $FILE: events.retention: 0s: must be positive (events and finished messages are kept this long)`,
		},
		{
			name: "suppression code not permanent",
			file: "suppression:\n  codes: ['4.7.1']\n",
			want: `config $FILE: suppression.codes[0]: "4.7.1" is not a permanent enhanced status code such as 5.7.1`,
		},
		{
			name: "bad log level",
			file: "log:\n  level: verbose\n",
			want: `config $FILE: log.level: "verbose" is not one of debug, info, warn, error`,
		},
		{
			name: "non-bcrypt hash",
			file: "submission:\n  allow_insecure_auth: true\n  users:\n    - username: alice\n      password_hash: \"$1$saltsalt$qjXMvbEw8oaL.CzflDugX/\"\n",
			want: `config $FILE: submission.users[0].password_hash: the hash of "alice" is not a bcrypt hash ($2a$, $2b$ or $2y$ followed by cost and 53 characters)`,
		},
		{
			name: "plain-text password as hash",
			file: "submission:\n  allow_insecure_auth: true\n  users:\n    - {username: alice, password_hash: hunter2}\n",
			want: `config $FILE: submission.users[0].password_hash: the hash of "alice" is not a bcrypt hash ($2a$, $2b$ or $2y$ followed by cost and 53 characters)`,
		},
		{
			name: "user without username",
			file: "submission:\n  allow_insecure_auth: true\n  users:\n    - password_hash: \"" + aliceHash + "\"\n",
			want: `config $FILE: submission.users[0]: username is empty`,
		},
		{
			name: "unknown key in a user",
			file: "submission:\n  users:\n    - {username: alice, password: x}\n",
			want: `config $FILE: submission.users[0]: unknown key "password"`,
		},
		{
			name: "api key name with a dot",
			file: "submission:\n  allow_insecure_auth: true\n  api_keys:\n    - {name: a.b, key_hash: \"" + aliceHash + "\"}\n",
			want: `config $FILE: submission.api_keys[0].name: "a.b" is not a key name (1-64 letters, digits, '-' or '_')`,
		},
		{
			name: "api keys in clear",
			file: "submission:\n  api_keys:\n    - {name: app, key_hash: \"" + aliceHash + "\"}\n",
			want: `config $FILE: submission.api_keys: keys would travel in clear: needs submission.tls (or allow_insecure_auth: true)`,
		},
		{
			name: "users without any way to AUTH",
			file: "submission:\n  users:\n    - {username: alice, password_hash: \"" + aliceHash + "\"}\n",
			want: `config $FILE: submission.users: AUTH needs submission.tls (or allow_insecure_auth: true)`,
		},
		{
			name:       "unreadable cert file",
			file:       "submission:\n  tls:\n    cert_file: $DIR/nope.pem\n    key_file: $DIR/key.pem\n",
			want:       `config $FILE: submission.tls.cert_file: open $DIR/nope.pem: no such file or directory`,
			wantPrefix: false,
		},
		{
			name: "unreadable key file",
			file: "submission:\n  tls:\n    cert_file: $DIR/cert.pem\n    key_file: $DIR/nope.pem\n",
			want: `config $FILE: submission.tls.key_file: open $DIR/nope.pem: no such file or directory`,
		},
		{
			name:       "mismatched cert and key",
			file:       "submission:\n  tls:\n    cert_file: $DIR/cert.pem\n    key_file: $DIR/other-key.pem\n",
			want:       `config $FILE: submission.tls.key_file: $DIR/other-key.pem does not fit certificate $DIR/cert.pem: `,
			wantPrefix: true,
		},
		{
			name: "cert without key",
			file: "submission:\n  tls:\n    cert_file: $DIR/cert.pem\n",
			want: `config $FILE: submission.tls.key_file: empty, but submission.tls.cert_file is set; set both or neither`,
		},
		{
			name: "implicit TLS listener without certificate",
			file: "submission:\n  tls_listen: [\"127.0.0.1:2465\"]\n",
			want: `config $FILE: submission.tls_listen: needs submission.tls.cert_file and key_file`,
		},
		{
			name: "no workers",
			file: "delivery:\n  workers: 0\n",
			want: `config $FILE: delivery.workers: 0 must be at least 1`,
		},
		{
			name: "smarthost password in clear",
			file: "delivery:\n  smarthost:\n    address: 127.0.0.1:25\n    username: u\n    password: p\n    tls: none\n",
			want: `config $FILE: delivery.smarthost.tls: none would send the password in clear text; use starttls or implicit, or set delivery.smarthost.allow_insecure_auth: true`,
		},
		{
			name:       "YAML syntax error",
			file:       "submission:\n  listen: [\n",
			want:       `config $FILE: yaml: line `,
			wantPrefix: true,
		},
		{
			name: "environment: bad number",
			env:  map[string]string{"RELAYQ_RETRY_MULTIPLIER": "x"},
			want: `environment RELAYQ_RETRY_MULTIPLIER: "x" is not a number`,
		},
		{
			name: "environment: bare-number duration",
			env:  map[string]string{"RELAYQ_SUBMISSION_READ_TIMEOUT": "300"},
			want: `environment RELAYQ_SUBMISSION_READ_TIMEOUT: "300" has no unit; write e.g. "300s" or "300m" (a bare number would mean nanoseconds)`,
		},
		{
			name: "environment: bad route",
			env:  map[string]string{"RELAYQ_DELIVERY_ROUTES": "example.com:127.0.0.1:25"},
			want: `environment RELAYQ_DELIVERY_ROUTES: "example.com:127.0.0.1:25" is not domain=host:port`,
		},
		{
			name: "environment: bad route address",
			env:  map[string]string{"RELAYQ_DELIVERY_ROUTES": "example.com=127.0.0.1"},
			want: `environment RELAYQ_DELIVERY_ROUTES: "127.0.0.1" is not host:port (e.g. mx.example.net:25): address 127.0.0.1: missing port in address`,
		},
		{
			name: "environment: user without hash",
			env:  map[string]string{"RELAYQ_SUBMISSION_USERS": "alice"},
			want: `environment RELAYQ_SUBMISSION_USERS: "alice" is not username:password_hash`,
		},
		{
			name: "environment: variable named after a section",
			file: "delivery:\n  smarthost:\n    address: 127.0.0.1:587\n",
			env:  map[string]string{"RELAYQ_DELIVERY_SMARTHOST": "127.0.0.1:25"},
			want: `environment RELAYQ_DELIVERY_SMARTHOST: "delivery.smarthost" is a section, not a key; set the variables of its keys instead (RELAYQ_DELIVERY_SMARTHOST_...)`,
		},
		{
			name: "environment: bad value wins over a good file",
			file: "delivery:\n  tls: required\n",
			env:  map[string]string{"RELAYQ_DELIVERY_TLS": "sometimes"},
			want: `environment RELAYQ_DELIVERY_TLS: "sometimes" is not one of opportunistic, required, none`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			dir := t.TempDir()
			writeKeyPair(t, dir)
			_, otherKey := newKeyPair(t)
			writeFile(t, dir, "other-key.pem", string(otherKey))
			path := filepath.Join(dir, "relayq.yaml")
			writeFile(t, dir, "relayq.yaml", strings.ReplaceAll(tt.file, "$DIR", dir))

			c, err := Load(path)
			if err == nil {
				t.Fatalf("Load succeeded with %+v; want an error", c)
			}
			msg := err.Error()
			want := strings.NewReplacer("$FILE", path, "$DIR", dir).Replace(tt.want)
			if tt.wantPrefix && !strings.HasPrefix(msg, want) || !tt.wantPrefix && msg != want {
				t.Errorf("error\n got: %s\nwant: %s", msg, want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error has more than one line: %q", msg)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	clearEnv(t)
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Load(path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
	if want := "config " + path + ": no such file or directory"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

// An empty file, a file of comments and an empty section all mean "the
// defaults".
func TestLoadEmptyFileAndSections(t *testing.T) {
	for _, content := range []string{"", "# nothing\n", "retry:\n", "retry: {}\n", "retry: ~\n"} {
		clearEnv(t)
		path := writeFile(t, t.TempDir(), "relayq.yaml", content)
		c, err := Load(path)
		if err != nil {
			t.Errorf("Load(%q): %v", content, err)
			continue
		}
		if c.Retry != Default().Retry {
			t.Errorf("Load(%q): retry = %+v, want defaults", content, c.Retry)
		}
	}
}

func FuzzLoad(f *testing.F) {
	f.Add(defaultsYAML)
	if full, err := os.ReadFile("../testdata/config/full.yaml"); err == nil {
		f.Add(full)
	}
	for _, s := range []string{
		"", "- 1\n", "retry: 5\n", "a: [", "delivery:\n  routes:\n    1: 2\n    a.b::c: {x: [1]}\n",
		"submission:\n  users: [1, {username: [x]}, {a: b}]\n", "retry:\n  multiplier: .nan\n  initial_delay: 1e400\n",
		"x: &a [*a]\n", "retry::initial_delay: 1s\n", "? [a]\n: b\n", "submission:\n  listen: [~, 1, {}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "config "+path+": ") && !strings.HasPrefix(msg, "environment ") {
				t.Fatalf("error does not name the file: %q", msg)
			}
			if strings.Contains(msg, "internal error") {
				t.Fatalf("internal error: %s", msg)
			}
			return
		}
		// Whatever was accepted must hold the invariants the other packages rely on.
		if c.Hostname == "" || c.Retry.InitialDelay <= 0 || c.Retry.MaxDelay < c.Retry.InitialDelay ||
			c.Retry.Multiplier < 1 || c.Delivery.Workers < 1 || c.Submission.MaxMessageBytes < 1 ||
			len(c.Submission.Listen)+len(c.Submission.TLSListen) == 0 || c.Delivery.Routes == nil {
			t.Fatalf("accepted an invalid config: %+v", c)
		}
	})
}

// Every key and section must have its own environment variable name, or
// setting one variable would change two keys.
func TestEnvironmentNamesAreUnique(t *testing.T) {
	l, err := newLoader("", nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, set := range []map[string]bool{l.leaves, l.sections} {
		for k := range set {
			name := envName(k)
			if other, dup := seen[name]; dup {
				t.Errorf("%s and %s both map to %s", dotted(other), dotted(k), name)
			}
			seen[name] = k
		}
	}
	if len(l.leaves) < 40 {
		t.Errorf("only %d keys found in defaults.yaml", len(l.leaves))
	}
}
