package config

import (
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
)

// The test's own rule for a name that holds a secret, written apart from
// the code's so that a slip in one is caught by the other: a word token,
// secret, password, hash, key, auth or credential, except in a name
// ending in _file (a path; the file holds the secret) or url (shown with
// its secrets hidden, checked apart).
var secretWord = regexp.MustCompile(`(^|_)(tokens?|secrets?|passwords?|passwd|hash(es)?|keys?|auth|credentials?)(_|$)`)

func testMarksSecret(name string) bool {
	return secretWord.MatchString(name) && !strings.HasSuffix(name, "_file")
}

const (
	canary    = "CANARY-s3cr3t"
	urlCanary = "https://user:CANARY-pw@host.example/p?token=CANARY-q#CANARY-f"
)

// shownFor is what config show prints for key (internal form) holding raw.
func shownFor(key string, raw any) string {
	return Setting{Key: dotted(key), raw: raw}.Shown()
}

// TestEveryKeyHidesItsSecrets walks every key of the settings table
// (defaults.yaml) and, for the lists of sections, every field their
// config.Config type has: any whose name marks a secret is shown
// redacted, and a URL in any key is shown without its password, query
// values or fragment. A key added later is walked too.
func TestEveryKeyHidesItsSecrets(t *testing.T) {
	l := mustLoader(t)
	walked := 0
	for k := range l.leaves {
		name := k[strings.LastIndex(k, delim)+1:]
		def := l.defaults.Get(k)
		if got := shownFor(k, urlCanary); strings.Contains(got, "CANARY") {
			t.Errorf("%s = %s: a URL's secrets are shown", dotted(k), got)
		}
		walked++
		if !testMarksSecret(name) {
			continue
		}
		if notSecret[k] {
			// Exempt only a key whose type holds no secret.
			if s, ok := def.(string); ok {
				if _, err := time.ParseDuration(s); err != nil {
					t.Errorf("%s is exempt from redaction but its default %q is text", dotted(k), s)
				}
			}
			continue
		}
		switch def.(type) {
		case string, nil:
			if got := shownFor(k, canary); strings.Contains(got, "CANARY") {
				t.Errorf("%s = %s: shown in clear", dotted(k), got)
			}
			if got := shownFor(k, ""); got != `""` {
				t.Errorf("%s unset is shown as %s, want \"\"", dotted(k), got)
			}
		case bool, int, float64:
		}
	}
	walked += walkEntries(t, l)
	if walked < 60 {
		t.Errorf("walked %d keys and fields; the table is bigger", walked)
	}
}

// walkEntries fills, for every list-of-sections key, one entry whose
// every string field (named as in YAML: the Go field in snake case) holds
// a canary in a field whose name marks a secret, and a URL with
// secrets in the others.
func walkEntries(t *testing.T, l *loader) int {
	n := 0
	for k := range l.leaves {
		f, ok := configField(reflect.TypeOf(Config{}), strings.Split(k, delim))
		if !ok || f.Kind() != reflect.Slice || f.Elem().Kind() != reflect.Struct {
			continue
		}
		entry := map[string]any{}
		secret := map[string]bool{}
		for i := range f.Elem().NumField() {
			sf := f.Elem().Field(i)
			if sf.Type.Kind() != reflect.String {
				continue
			}
			name := snake(sf.Name)
			secret[name] = testMarksSecret(name)
			entry[name] = urlCanary
			if secret[name] {
				entry[name] = canary
			}
			n++
		}
		got := shownFor(k, []any{entry})
		if strings.Contains(got, "CANARY") {
			t.Errorf("%s = %s: a secret of its entries is shown", dotted(k), got)
		}
		for name, s := range secret {
			if !s && !strings.Contains(got, name+": ") {
				t.Errorf("%s = %s: field %s is not shown at all", dotted(k), got, name)
			}
		}
	}
	return n
}

// configField finds the type of the Config field a key names, matching
// each part without underscores and case (mta_sts is MTASTS).
func configField(t reflect.Type, parts []string) (reflect.Type, bool) {
	for _, p := range parts {
		if t.Kind() != reflect.Struct {
			return nil, false
		}
		want := strings.ReplaceAll(p, "_", "")
		found := false
		for i := range t.NumField() {
			if strings.EqualFold(t.Field(i).Name, want) {
				t, found = t.Field(i).Type, true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return t, true
}

// snake is a Go field name as its YAML key: KeyHash is key_hash, URL is url.
func snake(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 && (unicode.IsLower(r[i-1]) || (i+1 < len(r) && unicode.IsLower(r[i+1]))) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// TestConfigShowHidesEverySecret loads a file and environment that set
// every kind of secret the config can hold and checks the effective
// configuration shows none of them, while what is not secret stays.
func TestConfigShowHidesEverySecret(t *testing.T) {
	clearEnv(t)
	const hash = "$2y$10$abcdefghijklmnopqrstuuJ7Zl9mMIzKCDXfHNmOYQf4PsU0ew.Ze"
	path := writeFile(t, t.TempDir(), "relayq.yaml", `
admin:
  token: tok-admin
  read_token: tok-read
delivery:
  smarthost:
    address: smart.example.net:587
    username: relay
    password: pw-smarthost
submission:
  allow_insecure_auth: true
  users:
    - {username: app, password_hash: "`+hash+`"}
  api_keys:
    - {name: billing, key_hash: "`+hash+`"}
events:
  webhooks:
    - {url: "https://hookuser:pw-hook@hooks.example/in?token=tok-query", secret: wh-secret}
`)
	_, set, err := LoadSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]string{}
	var all strings.Builder
	for _, s := range set {
		shown[s.Key] = s.Shown()
		all.WriteString(s.Key + " = " + s.Shown() + "\n")
	}
	leaks := 0
	for _, secret := range []string{"tok-admin", "tok-read", "pw-smarthost", hash[7:], "pw-hook", "tok-query", "wh-secret"} {
		leaks += strings.Count(all.String(), secret)
	}
	if leaks != 0 {
		t.Errorf("secrets shown %d times:\n%s", leaks, all.String())
	}
	for key, want := range map[string]string{
		"events.webhooks":             "[{secret: " + Redacted + ", url: https://hookuser:xxxxx@hooks.example/in?token=xxxxx}]",
		"submission.api_keys":         "[{key_hash: " + Redacted + ", name: billing}]",
		"submission.users":            "[app:" + Redacted + "]",
		"cluster.redis_url":           `""`,
		"delivery.smarthost.username": "relay",
	} {
		if shown[key] != want {
			t.Errorf("%s = %s, want %s", key, shown[key], want)
		}
	}
	if n := strconv.Itoa(strings.Count(all.String(), "%22")); n != "0" {
		t.Errorf("%s values shown URL-escaped", n)
	}

	// The same secrets from the environment, in its forms: YAML for a
	// list of sections, name:hash pairs for API keys.
	t.Setenv("RELAYQ_EVENTS_WEBHOOKS", `[{url: "https://env.example/h?token=tok-env", secret: env-secret}]`)
	t.Setenv("RELAYQ_SUBMISSION_API_KEYS", "envkey:"+hash)
	t.Setenv("RELAYQ_CLUSTER_REDIS_URL", "redis://:pw-redis@127.0.0.1:6379/0")
	_, set, err = LoadSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	all.Reset()
	for _, s := range set {
		all.WriteString(s.Key + " = " + s.Shown() + "\n")
	}
	for _, secret := range []string{"tok-env", "env-secret", hash[7:], "pw-redis"} {
		if strings.Contains(all.String(), secret) {
			t.Errorf("%s from the environment is shown:\n%s", secret, all.String())
		}
	}
	if !strings.Contains(all.String(), "submission.api_keys = [{key_hash: "+Redacted+", name: envkey}]") {
		t.Errorf("API key names from the environment are not shown:\n%s", all.String())
	}
}

// TestConfigShowShowsNotSecret: the keys a secret word names but that hold
// a switch, a count or a duration are shown as set, not redacted; the
// token beside them still is.
func TestConfigShowShowsNotSecret(t *testing.T) {
	clearEnv(t)
	path := writeFile(t, t.TempDir(), "relayq.yaml", "submission:\n  allow_insecure_auth: true\n  auth_max_failures: 7\n  auth_lockout: 9m\n"+
		"delivery:\n  smarthost:\n    allow_insecure_auth: true\nadmin:\n  token: CANARY-token-0123456789\n"+
		"queue:\n  path: "+filepath.Join(t.TempDir(), "queue.db")+"\n")
	_, settings, err := LoadSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"submission.allow_insecure_auth":         "true",
		"submission.auth_max_failures":           "7",
		"submission.auth_lockout":                "9m",
		"delivery.smarthost.allow_insecure_auth": "true",
		"admin.token":                            Redacted,
	}
	for _, s := range settings {
		if w, ok := want[s.Key]; ok {
			if got := s.Shown(); got != w {
				t.Errorf("%s shown as %s, want %s", s.Key, got, w)
			}
			delete(want, s.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("keys not listed: %v", want)
	}
}
