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
	"github.com/relayq/relayq/internal/tenant"
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
	if err := os.WriteFile(filepath.Join(dir, "verp.key"), []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir) // full.yaml names cert.pem and key.pem relative to the working directory

	got, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := fullFileWant(path)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
	// Every field differs from its default, so the file really exercises
	// every key rather than passing because defaults filled the gaps.
	if d := Default(); reflect.DeepEqual(got.Submission.TLS, d.Submission.TLS) || got.Log == d.Log {
		t.Error("full.yaml leaves keys at their defaults")
	}
}

// fullFileWant is the Config that testdata/config/full.yaml describes,
// loaded from path.
func fullFileWant(path string) *Config {
	return &Config{
		Hostname:        "mail.example.net",
		ShutdownTimeout: 45 * time.Second,
		Submission:      fullFileSubmission(),
		Queue:           Queue{Path: "/var/lib/relayq/queue.db", ReserveBytes: 50 << 20},
		Admin: Admin{Listen: "127.0.0.1:9025", Token: "s3cret-token", AllowedHosts: []string{"relay1.example.net", "relayq-a:9025"},
			TLS: TLSFiles{CertFile: "cert.pem", KeyFile: "key.pem"}},
		Retry: Retry{
			InitialDelay: 30 * time.Second,
			Multiplier:   1.5,
			Jitter:       5 * time.Second,
			MaxDelay:     time.Hour,
			MaxAttempts:  20,
			MaxAge:       120 * time.Hour,
			WarnAfter:    4 * time.Hour,
		},
		Delivery: fullFileDelivery(),
		Shaping:  fullFileShaping(),
		DKIM:     DKIM{Keys: []DKIMKey{}, Headers: []string{}},
		Cluster:  Cluster{RedisURL: "rediss://:cluster-pass@127.0.0.1:6380/2", NodeName: "relay-1", ExpectedNodes: 3, Adopt: []string{}, AdoptAfter: 30 * time.Second},
		Log:      Log{Format: "json", Level: "debug"},
		Events: Events{Retention: 72 * time.Hour, Webhooks: []Webhook{
			{URL: "https://app.example.org/hooks/relayq", Secret: "hook secret", Types: []string{"bounced", "expired"}, Batch: 10},
			{URL: "http://127.0.0.1:9000/h", Secret: "s2", Types: []string{}, Batch: 100},
		}},
		Suppression: Suppression{Codes: []string{"5.7.1"}, Expire: 720 * time.Hour, DomainExpire: 24 * time.Hour, ExemptAuthenticated: true, ExemptTrusted: true},
		Bounces: Bounces{Domain: "bounces.example.net", Listen: []string{"127.0.0.1:2525"}, SecretFile: "verp.key",
			Forward: false, ComplaintExpire: 8760 * time.Hour, MaxMessageBytes: 1 << 20,
			FeedbackLoops: []FeedbackLoop{{Address: "fbl@bounces.example.net", Senders: []string{"feedbackloop@yahoo.com", "@fbl.example.net"}, ForwardTo: "abuse-desk@example.net"}},
			Limits:        BounceLimits{PerClient: 300, PerAddress: 5, Window: 30 * time.Minute, DuplicateWindow: 48 * time.Hour},
			ProxyProtocol: ProxyProtocol{Trusted: []netip.Prefix{netip.MustParsePrefix("10.9.8.0/24")}}},
		Streams: []Stream{{Name: "transactional", Weight: 10},
			{Name: "bulk", Weight: 1, Preflight: Preflight{DKIMAlignment: "refuse", DMARC: "warn", OneClick: "add"}}},
		Unsubscribe: Unsubscribe{Listen: []string{"127.0.0.1:8090"}, URL: "https://unsubscribe.example.net", SecretFile: "verp.key"},
		Tenants:     []tenant.Tenant{},
		File:        path,
	}
}

// fullFileSubmission is the submission section of full.yaml.
func fullFileSubmission() Submission {
	return Submission{
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
			{Username: "bob", PasswordHash: bobHash, Stream: "transactional"},
		},
		HTTPListen:          "127.0.0.1:8587",
		APIKeys:             []APIKey{{Name: "billing", KeyHash: aliceHash, Stream: "bulk"}},
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
		IdempotencyWindow:   time.Hour,
		MaxHold:             48 * time.Hour,
		DefaultStream:       "transactional",
		ProxyProtocol: ProxyProtocol{Trusted: []netip.Prefix{
			netip.MustParsePrefix("10.9.0.0/16"), netip.MustParsePrefix("192.0.2.20/32"),
		}},
	}
}

// fullFileDelivery is the delivery section of full.yaml.
func fullFileDelivery() Delivery {
	return Delivery{
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
	}
}

// fullFileShaping is the shaping section of full.yaml.
func fullFileShaping() shaping.Config {
	return shaping.Config{
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
		Adaptive: defaultAdaptive(),
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

// envOverrideTests are the cases of TestEnvironmentOverrides: each sets
// some RELAYQ_ variables (and maybe a file) and checks one observed value.
var envOverrideTests = []struct {
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
		want:  []User{{Username: "alice", PasswordHash: aliceHash}, {Username: "bob", PasswordHash: bobHash}},
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

func TestEnvironmentOverrides(t *testing.T) {
	for _, tt := range envOverrideTests {
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
