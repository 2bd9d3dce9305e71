package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSettingsSourcesAndRedaction(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	path := writeFile(t, dir, "relayq.yaml", `
retry:
  max_age: 48h
admin:
  token: file-secret
delivery:
  routes:
    example.com: 10.0.0.5:25
  smarthost:
    address: smart.example.net:587
    username: relay
    password: hunter2
cluster:
  redis_url: "redis://:cluster-pass@127.0.0.1:6379/0"
submission:
  allow_insecure_auth: true
  users:
    - username: app
      password_hash: "$2y$10$abcdefghijklmnopqrstuuJ7Zl9mMIzKCDXfHNmOYQf4PsU0ew.Ze"
`)
	t.Setenv("RELAYQ_DELIVERY_WORKERS", "8")
	_, set, err := LoadSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Setting{}
	for _, s := range set {
		got[s.Key] = s
	}
	tests := []struct {
		key    string
		shown  string
		source Source
	}{
		{"retry.max_age", "48h", SourceFile},
		{"retry.max_delay", "64s", SourceDefault},
		{"delivery.workers", "8", SourceEnv},
		{"delivery.routes", "{example.com: 10.0.0.5:25}", SourceFile},
		{"admin.token", Redacted, SourceFile},
		{"admin.read_token", `""`, SourceDefault},
		{"delivery.smarthost.password", Redacted, SourceFile},
		{"delivery.smarthost.username", "relay", SourceFile},
		{"submission.users", "[app:" + Redacted + "]", SourceFile},
		{"submission.trusted_networks", "[127.0.0.0/8, ::1/128]", SourceDefault},
		{"cluster.redis_url", "redis://:xxxxx@127.0.0.1:6379/0", SourceFile},
	}
	for _, tt := range tests {
		s, ok := got[tt.key]
		if !ok {
			t.Errorf("%s missing", tt.key)
			continue
		}
		if s.Shown() != tt.shown || s.Source != tt.source {
			t.Errorf("%s = %q (%s), want %q (%s)", tt.key, s.Shown(), s.Source, tt.shown, tt.source)
		}
	}
	if n := len(set); n != len(mustLoader(t).leaves) {
		t.Errorf("%d settings, want one per key (%d)", n, len(mustLoader(t).leaves))
	}
}

func mustLoader(t *testing.T) *loader {
	t.Helper()
	l, err := newLoader("", nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestWarnings(t *testing.T) {
	dir := t.TempDir()
	notDir := writeFile(t, dir, "plain-file", "x")
	tests := []struct {
		name string
		file string
		want []string // warnings, in order
	}{
		{"defaults are quiet", "log:\n  level: info\n", nil},
		{"empty file", "# nothing here\n", []string{"config $FILE sets nothing: the built-in defaults run"}},
		{"open relay", "submission:\n  trusted_networks: [\"10.0.0.0/8\", \"0.0.0.0/0\", \"::/0\"]\n", []string{
			"submission.trusted_networks: 0.0.0.0/0 trusts every address: anyone who can connect may relay mail through you (an open relay)",
			"submission.trusted_networks: ::/0 trusts every address: anyone who can connect may relay mail through you (an open relay)",
		}},
		{"PROXY protocol from anyone", "submission:\n  proxy_protocol:\n    trusted: [\"10.0.5.0/24\", \"::/0\"]\n", []string{
			"submission.proxy_protocol.trusted: ::/0 trusts every address to name its client: anyone who can connect may claim any address, one in trusted_networks or one not yet locked out",
		}},
		{"admin on every address without token", "admin:\n  listen: \":8025\"\n", []string{
			"admin.listen: :8025 is reachable beyond this host and admin.token is empty: anyone who can connect can delete mail",
		}},
		{"admin on every address with a short token, no TLS", "admin:\n  listen: \"0.0.0.0:8025\"\n  token: abc\n", []string{
			"admin.token: is 3 characters, shorter than 16: a short token can be guessed; use e.g. `openssl rand -hex 16`",
			"admin.tls: not set while admin.listen 0.0.0.0:8025 is reachable beyond this host: the token crosses the network in clear text",
		}},
		{"admin on loopback with a short read token", "admin:\n  token: 0123456789abcdef\n  read_token: ro\n", []string{
			"admin.read_token: is 2 characters, shorter than 16: a short token can be guessed; use e.g. `openssl rand -hex 16`",
		}},
		{"admin on loopback with a long token", "admin:\n  token: 0123456789abcdef\n", nil},
		{"auth without tls", "submission:\n  allow_insecure_auth: true\n  users:\n    - username: app\n      password_hash: \"$2y$10$abcdefghijklmnopqrstuuJ7Zl9mMIzKCDXfHNmOYQf4PsU0ew.Ze\"\n", []string{
			"submission.allow_insecure_auth: AUTH is offered without TLS: passwords cross the network in clear text",
		}},
		{"queue below a file", "queue:\n  path: " + filepath.Join(notDir, "queue.db") + "\n", []string{
			"queue.path: " + filepath.Join(notDir, "queue.db") + ": " + notDir + " is not a directory",
		}},
	}
	// Where nothing can be created although access(2) says yes to root:
	// check-config used to say ok.
	if st, err := os.Stat("/proc"); err == nil && st.IsDir() {
		tests = append(tests, struct {
			name string
			file string
			want []string
		}{"queue where nothing can be created", "queue:\n  path: /proc/relayq/queue.db\n", []string{
			"queue.path: /proc/relayq/queue.db: ",
		}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			file := tt.file
			if !strings.Contains(file, "queue:") {
				file += "queue:\n  path: " + filepath.Join(t.TempDir(), "q", "queue.db") + "\n"
				if tt.name == "empty file" {
					file = tt.file
					t.Chdir(t.TempDir())
				}
			}
			path := writeFile(t, t.TempDir(), "relayq.yaml", file)
			c, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range Warnings(c) {
				got = append(got, w.String())
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, strings.ReplaceAll(w, "$FILE", path))
			}
			if len(got) != len(want) {
				t.Fatalf("warnings %q, want %q", got, want)
			}
			for i := range got {
				prefixOnly := strings.HasSuffix(want[i], ": ") // the rest is the system's error
				if got[i] != want[i] && !(prefixOnly && strings.HasPrefix(got[i], want[i])) {
					t.Errorf("warning %d = %q, want %q", i, got[i], want[i])
				}
			}
		})
	}
}
