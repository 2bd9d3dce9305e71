package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/relayq/relayq/config"
)

// clearRelayqEnv keeps the machine's RELAYQ_ variables out of the test.
func clearRelayqEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "RELAYQ_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
}

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "relayq.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// `relayq serve relayq.yaml` used to run the embedded defaults.
func TestPositionalConfigIsRefused(t *testing.T) {
	for _, name := range []string{"serve", "check-config"} {
		_, err := configFlag(name, []string{"relayq.yaml"}, &bytes.Buffer{}, nil)
		if err == nil || !strings.Contains(err.Error(), "give the config file with --config relayq.yaml") {
			t.Errorf("%s relayq.yaml: %v, want advice to use --config", name, err)
		}
	}
}

func TestHelpIsSuccessWithExamples(t *testing.T) {
	for _, name := range []string{"serve", "check-config"} {
		var out bytes.Buffer
		_, err := configFlag(name, []string{"--help"}, &out, nil)
		if !helpAsked(err) {
			t.Errorf("%s --help: %v, want the help answer", name, err)
		}
		for _, want := range []string{"usage: relayq " + name, "-config", "examples:"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s --help lacks %q:\n%s", name, want, out.String())
			}
		}
	}
}

func TestCheckConfigWarnsAndStrictFails(t *testing.T) {
	clearRelayqEnv(t)
	path := writeConfig(t, "submission:\n  trusted_networks: [\"0.0.0.0/0\"]\nqueue:\n  path: "+filepath.Join(t.TempDir(), "q.db")+"\n")
	var out bytes.Buffer
	if err := checkConfig([]string{"--config", path}, &out); err != nil {
		t.Fatalf("check-config without --strict: %v", err)
	}
	if !strings.Contains(out.String(), "warning: submission.trusted_networks: 0.0.0.0/0 trusts every address") ||
		!strings.Contains(out.String(), path+": ok, with 1 warning") {
		t.Errorf("output:\n%s", out.String())
	}
	out.Reset()
	err := checkConfig([]string{"--config", path, "--strict"}, &out)
	if err == nil || err.Error() != path+": 1 warning (--strict)" {
		t.Errorf("--strict: %v", err)
	}
}

func TestConfigShow(t *testing.T) {
	clearRelayqEnv(t)
	path := writeConfig(t, "retry:\n  max_age: 48h\nadmin:\n  token: do-not-print\n")
	t.Setenv("RELAYQ_DELIVERY_WORKERS", "8")
	var out bytes.Buffer
	if err := configCmd([]string{"show", "--config", path}, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Contains(s, "do-not-print") {
		t.Errorf("the token is printed:\n%s", s)
	}
	for _, re := range []string{
		`(?m)^retry\.max_age = 48h +# file$`,
		`(?m)^delivery\.workers = 8 +# env$`,
		`(?m)^retry\.max_delay = 64s +# default$`,
		`(?m)^admin\.token = <redacted> +# file$`,
	} {
		if !regexpMatch(re, s) {
			t.Errorf("output lacks %s:\n%s", re, s)
		}
	}
	out.Reset()
	if err := configCmd([]string{"show", "--config", path, "--changed"}, &out); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 4 { // header + 3 keys
		t.Errorf("--changed printed %d lines:\n%s", lines, out.String())
	}
}

// `relayq config show` printed webhook secrets, API key hashes and the
// password and token of a webhook URL in clear, and an empty
// cluster.redis_url as %22%22.
func TestConfigShowRedactsWebhooksAndKeys(t *testing.T) {
	clearRelayqEnv(t)
	path := writeConfig(t, `submission:
  allow_insecure_auth: true
  api_keys:
    - {name: billing, key_hash: "$2y$10$abcdefghijklmnopqrstuuJ7Zl9mMIzKCDXfHNmOYQf4PsU0ew.Ze"}
events:
  webhooks:
    - {url: "https://u:hook-pw@hooks.example/in?token=hook-tok", secret: hook-secret}
`)
	var out bytes.Buffer
	if err := configCmd([]string{"show", "--config", path}, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, secret := range []string{"hook-pw", "hook-tok", "hook-secret", "abcdefghijklmnop", "%22"} {
		if strings.Contains(s, secret) {
			t.Errorf("config show prints %q:\n%s", secret, s)
		}
	}
	for _, re := range []string{
		`(?m)^cluster\.redis_url = "" +# default$`,
		`(?m)^submission\.api_keys = \[\{key_hash: <redacted>, name: billing\}\] +# file$`,
		`(?m)^events\.webhooks = \[\{secret: <redacted>, url: https://u:xxxxx@hooks\.example/in\?token=xxxxx\}\] +# file$`,
	} {
		if !regexpMatch(re, s) {
			t.Errorf("output lacks %s:\n%s", re, s)
		}
	}
}

func TestReloadDiff(t *testing.T) {
	set := func(kv ...string) []config.Setting {
		var out []config.Setting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, config.Setting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	running := set("delivery.routes", "{}", "delivery.workers", "32", "dkim.keys", "[]", "submission.api_keys", "[]",
		"submission.listen", "[127.0.0.1:2525]", "submission.tls.cert_file", `""`)
	loaded := set("delivery.routes", "{a.example: mx:25}", "delivery.workers", "64", "dkim.keys", "[{domain: example.org}]", "submission.api_keys", "[{name: app}]",
		"submission.listen", "[127.0.0.1:2525]", "submission.tls.cert_file", "/etc/cert.pem")
	applied, restart, now := reloadDiff(running, loaded)
	// DKIM keys (signer.Update) and API keys (SetPolicy) rotate without a restart.
	if want := []string{"delivery.routes", "dkim.keys", "submission.api_keys"}; !reflect.DeepEqual(applied, want) {
		t.Errorf("applied %q, want %q", applied, want)
	}
	if want := []string{"delivery.workers", "submission.tls.cert_file"}; !reflect.DeepEqual(restart, want) {
		t.Errorf("restart %q, want %q (turning TLS on needs a restart)", restart, want)
	}
	// A second SIGHUP with the same file warns again: the running value is still the old one.
	_, restart2, _ := reloadDiff(now, loaded)
	if !reflect.DeepEqual(restart2, restart) {
		t.Errorf("second reload: restart %q, want %q", restart2, restart)
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// The cluster: keys need a restart (the Redis client and node name are
// fixed when the shaping state is built): a SIGHUP names each of them.
func TestReloadClusterKeysNeedRestart(t *testing.T) {
	running := []config.Setting{{Key: "cluster.redis_url", Value: `""`}, {Key: "cluster.node_name", Value: "a"}, {Key: "cluster.expected_nodes", Value: "1"}}
	loaded := []config.Setting{{Key: "cluster.redis_url", Value: "redis://127.0.0.1:6379/0"}, {Key: "cluster.node_name", Value: "b"}, {Key: "cluster.expected_nodes", Value: "3"}}
	applied, restart, _ := reloadDiff(running, loaded)
	if len(applied) != 0 || len(restart) != 3 {
		t.Errorf("applied %q, restart %q; want every cluster key to need a restart", applied, restart)
	}
}

// `relayq config show KEY...` prints those keys, postconf-style; a
// section stands for its keys; a misspelt key gets a suggestion.
func TestConfigShowKeys(t *testing.T) {
	clearRelayqEnv(t)
	path := writeConfig(t, "admin:\n  listen: 127.0.0.1:32080\n  token: s3cret\n")
	var out bytes.Buffer
	if err := configCmd([]string{"show", "--config", path, "admin.listen", "submission.listen", "admin.token"}, &out); err != nil {
		t.Fatal(err)
	}
	want := "admin.listen = 127.0.0.1:32080\nsubmission.listen = [127.0.0.1:2525]\nadmin.token = <redacted>\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if err := configCmd([]string{"show", "retry", "--config", path}, &out); err != nil || !strings.Contains(out.String(), "retry.max_delay = ") || strings.Contains(out.String(), "admin.") {
		t.Errorf("section: %v\n%s", err, out.String())
	}
	err := configCmd([]string{"show", "--config", path, "admin.lisen"}, &out)
	if err == nil || err.Error() != `config show: unknown key "admin.lisen" (did you mean "admin.listen"?)` {
		t.Errorf("misspelt: %v", err)
	}
}
