package main

import (
	"bytes"
	"net"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/sendmail"
	"github.com/relayq/relayq/internal/suppression"
)

// adminConfig writes a relayq.yaml whose admin.listen is the admin API
// at base, as an operator's /etc/relayq/relayq.yaml would be.
func adminConfig(t *testing.T, base, token string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, "admin:\n  listen: "+u.Host+"\n  token: "+token+"\nqueue:\n  path: "+filepath.Join(t.TempDir(), "q.db")+"\n")
}

// deadURL is an admin URL where nothing listens.
func deadURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

// Every command that asks a running relay finds it, and its token, from
// the configuration file, as postqueue reads main.cf.
func TestCommandsFindTheRelayFromConfig(t *testing.T) {
	clearRelayqEnv(t)
	r := newRelay(t, "")
	ts := httptest.NewServer(admin.NewHandler(admin.Options{Store: r.store, Clock: r.clock, Logger: quietLog, Token: "s3cret",
		Suppressions: &suppression.List{Store: r.store.Suppressions(), Clock: r.clock}}))
	defer ts.Close()
	cfg := adminConfig(t, ts.URL, "s3cret")
	cases := []struct {
		name string
		run  func(out *bytes.Buffer) error
		want string
	}{
		{"queue list", func(out *bytes.Buffer) error { return queueCmd([]string{"list", "--config", cfg}, out) }, "Mail queue is empty\n"},
		{"suppressions list", func(out *bytes.Buffer) error { return suppressionsCmd([]string{"list", "--config", cfg}, out) }, "address,since,source,reply\n"},
		{"healthcheck", func(out *bytes.Buffer) error { return healthcheck([]string{"--config", cfg}, out) }, "ready\n"},
		{"sendmail -bp -C", func(out *bytes.Buffer) error {
			code := sendmail.Run([]string{"-bp", "-C", cfg}, sendmail.Env{Stdout: out, Stderr: out, QueueList: sendmailEnv().QueueList})
			if code != 0 {
				t.Errorf("exit %d", code)
			}
			return nil
		}, "Mail queue is empty\n"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		if err := c.run(&out); err != nil || out.String() != c.want {
			t.Errorf("%s --config: %v, output %q, want %q", c.name, err, out.String(), c.want)
		}
	}
}

// --admin and RELAYQ_ADMIN_URL still win over the file; --token and
// RELAYQ_ADMIN_TOKEN over its admin.token.
func TestAdminFlagAndEnvironmentWinOverConfig(t *testing.T) {
	clearRelayqEnv(t)
	r := newRelay(t, "s3cret")
	stale := writeConfig(t, "admin:\n  listen: "+strings.TrimPrefix(deadURL(t), "http://")+"\n  token: wrong\n")
	var out bytes.Buffer
	if err := queueCmd([]string{"list", "--config", stale, "--admin", r.url, "--token", "s3cret"}, &out); err != nil {
		t.Errorf("--admin over admin.listen: %v", err)
	}
	t.Setenv("RELAYQ_ADMIN_URL", r.url)
	t.Setenv("RELAYQ_ADMIN_TOKEN", "s3cret")
	if err := queueCmd([]string{"list", "--config", stale}, &out); err != nil {
		t.Errorf("RELAYQ_ADMIN_URL over admin.listen: %v", err)
	}
}

// A file the CLI cannot use says which file and key, and how to go on.
func TestAdminConfigErrors(t *testing.T) {
	clearRelayqEnv(t)
	off := writeConfig(t, "admin:\n  listen: \"\"\n")
	err := queueCmd([]string{"list", "--config", off}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), off+": admin.listen: empty: the admin API is off") {
		t.Errorf("admin API off: %v", err)
	}
	bad := writeConfig(t, "admin:\n  lisen: 127.0.0.1:1\n")
	err = queueCmd([]string{"list", "--config", bad}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `"admin.lisen"`) || !strings.Contains(err.Error(), "--admin URL") {
		t.Errorf("misspelt key: %v", err)
	}
}

func TestAdminURLFromListen(t *testing.T) {
	for listen, want := range map[string]string{
		"127.0.0.1:32080": "http://127.0.0.1:32080",
		":8025":           "http://127.0.0.1:8025",
		"0.0.0.0:8025":    "http://127.0.0.1:8025",
		"[::]:8025":       "http://[::1]:8025",
		"[::1]:9":         "http://[::1]:9",
		"relay.test:8025": "http://relay.test:8025",
	} {
		if got, err := adminURL(listen, false); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", listen, got, err, want)
		}
	}
}
