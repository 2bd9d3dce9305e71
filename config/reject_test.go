package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// Each kind of mistake must stop Load with one line that names the file
// and key (or the environment variable) and says what is wrong. In want,
// $FILE is the config file and $DIR its directory, which holds cert.pem,
// key.pem (a matching pair) and other-key.pem (a key of another pair).
// The mistakes are in one table per config section.

// badConfig is one mistake and the error Load must give for it.
type badConfig struct {
	name string
	file string
	env  map[string]string
	want string // the whole message, or with wantPrefix only its start
	// wantPrefix: want is a prefix, because the rest comes from a library.
	wantPrefix bool
}

// wantRejected runs each of tests as a subtest.
func wantRejected(t *testing.T, tests []badConfig) {
	t.Helper()
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

// Mistakes of reading itself: unknown keys and variables, wrong types,
// durations, YAML syntax, and an environment value that overrides a file.
// badKeysAndTypes are unknown keys and variables, and values of the wrong
// type, each with the exact message Load must give.
var badKeysAndTypes = []badConfig{
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

func TestLoadRejectsBadKeysAndTypes(t *testing.T) {
	wantRejected(t, badKeysAndTypes)
}

// Mistakes in the submission section: networks, listeners, users, API
// keys and TLS files.
// badSubmissions are bad submission sections, each with the exact message
// Load must give.
var badSubmissions = []badConfig{
	{
		name: "bad CIDR",
		file: "submission:\n  trusted_networks: [\"10.0.0.0/8\", \"10.0.0.0/33\"]\n",
		want: `config $FILE: submission.trusted_networks[1]: "10.0.0.0/33" is not a network such as 10.0.0.0/8 or 192.0.2.1`,
	},
	{
		name: "bad PROXY protocol CIDR",
		file: "submission:\n  proxy_protocol:\n    trusted: [\"10.0.0.0/8\", \"haproxy.internal\"]\n",
		want: `config $FILE: submission.proxy_protocol.trusted[1]: "haproxy.internal" is not a network such as 10.0.0.0/8 or 192.0.2.1`,
	},
	{
		name: "bad bounce PROXY protocol CIDR",
		file: "bounces:\n  proxy_protocol:\n    trusted: [\"10.0.0.0/40\"]\n",
		want: `config $FILE: bounces.proxy_protocol.trusted[0]: "10.0.0.0/40" is not a network such as 10.0.0.0/8 or 192.0.2.1`,
	},
	{
		name: "bad listen host:port",
		file: "submission:\n  listen: [\"127.0.0.1\"]\n",
		want: `config $FILE: submission.listen[0]: "127.0.0.1" is not host:port (e.g. 127.0.0.1:2525): address 127.0.0.1: missing port in address`,
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
		name: "environment: user without hash",
		env:  map[string]string{"RELAYQ_SUBMISSION_USERS": "alice"},
		want: `environment RELAYQ_SUBMISSION_USERS: "alice" is not username:password_hash, username:password_hash:stream or username:password_hash:stream:pool`,
	},
}

func TestLoadRejectsBadSubmission(t *testing.T) {
	wantRejected(t, badSubmissions)
}

// Mistakes in the admin section: tokens, allowed hosts and the TLS pair.
func TestLoadRejectsBadAdmin(t *testing.T) {
	wantRejected(t, []badConfig{
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
			name: "admin cert file missing",
			file: "admin:\n  tls:\n    cert_file: $DIR/nope.pem\n    key_file: $DIR/key.pem\n",
			want: `config $FILE: admin.tls.cert_file: open $DIR/nope.pem: no such file or directory`,
		},
		{
			name: "admin key file missing",
			file: "admin:\n  tls:\n    cert_file: $DIR/cert.pem\n    key_file: $DIR/nope.pem\n",
			want: `config $FILE: admin.tls.key_file: open $DIR/nope.pem: no such file or directory`,
		},
		{
			name: "admin cert without key",
			file: "admin:\n  tls:\n    cert_file: $DIR/cert.pem\n",
			want: `config $FILE: admin.tls.key_file: empty, but admin.tls.cert_file is set; set both or neither`,
		},
		{
			name: "environment: admin cert file missing",
			env:  map[string]string{"RELAYQ_ADMIN_TLS_CERT_FILE": "nope.pem", "RELAYQ_ADMIN_TLS_KEY_FILE": "nope-key.pem"},
			want: `environment RELAYQ_ADMIN_TLS_CERT_FILE: open nope.pem: no such file or directory`,
		},
		{
			name: "admin key without cert",
			file: "admin:\n  tls:\n    key_file: $DIR/key.pem\n",
			want: `config $FILE: admin.tls.cert_file: empty, but admin.tls.key_file is set; set both or neither`,
		},
		{
			name:       "admin key of another certificate",
			file:       "admin:\n  tls:\n    cert_file: $DIR/cert.pem\n    key_file: $DIR/other-key.pem\n",
			want:       `config $FILE: admin.tls.key_file: $DIR/other-key.pem does not fit certificate $DIR/cert.pem: `,
			wantPrefix: true,
		},
	})
}

// Mistakes in the retry section that are about values, not types.
func TestLoadRejectsBadRetry(t *testing.T) {
	wantRejected(t, []badConfig{
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
	})
}

// Mistakes in the delivery section: routes, smarthost, DNS, TLS policy
// and workers.
func TestLoadRejectsBadDelivery(t *testing.T) {
	wantRejected(t, []badConfig{
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
			name: "environment: bad route",
			env:  map[string]string{"RELAYQ_DELIVERY_ROUTES": "example.com:127.0.0.1:25"},
			want: `environment RELAYQ_DELIVERY_ROUTES: "example.com:127.0.0.1:25" is not domain=host:port`,
		},
		{
			name: "environment: bad route address",
			env:  map[string]string{"RELAYQ_DELIVERY_ROUTES": "example.com=127.0.0.1"},
			want: `environment RELAYQ_DELIVERY_ROUTES: "127.0.0.1" is not host:port (e.g. mx.example.net:25): address 127.0.0.1: missing port in address`,
		},
	})
}

// Mistakes in the events, suppression and log sections.
func TestLoadRejectsBadEventsAndLog(t *testing.T) {
	wantRejected(t, []badConfig{
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
			// Error messages go to the log on a refused reload: a URL in
			// them never shows its userinfo, query or fragment.
			name: "webhook URL with secrets, not http",
			file: "events:\n  webhooks:\n    - {url: 'ftp://u:pw@x/h?token=abc', secret: s}\n",
			want: `config $FILE: events.webhooks[0].url: "ftp://x/h" is not an http:// or https:// URL`,
		},
		{
			name: "webhook URL with secrets, twice",
			file: "events:\n  webhooks:\n    - {url: 'https://u:pw@x/h?token=abc', secret: s}\n    - {url: 'https://u:pw@x/h?token=abc', secret: s}\n",
			want: `config $FILE: events.webhooks[1].url: "https://x/h" is listed twice`,
		},
		{
			name: "webhook with an unknown event type",
			file: "events:\n  webhooks:\n    - {url: 'https://x/h', secret: s, types: [sent]}\n",
			want: `config $FILE: events.webhooks[0].types[0]: "sent" is not an event type (queued, delivered, deferred, bounced, expired, delayed, suppressed, dsn_sent, scheduled, complained, auto_replied, deleted, held, released, unsubscribed, tenant_state)`,
		},
		{
			name: "zero retention",
			file: "events:\n  retention: 0\n",
			want: `config $FILE: events.retention: 0s: must be positive (events and finished messages are kept this long)`,
		},
		{
			name: "negative 5.1.2 expiry",
			file: "suppression:\n  domain_expire: -1h\n",
			want: `config $FILE: suppression.domain_expire: -1h0m0s is negative (0 leaves 5.1.2 entries to suppression.expire)`,
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
	})
}
