package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDrainCredentials: USER:PASS comes from --auth, else --auth-file,
// else RELAYQ_DRAIN_AUTH; anything without a user is refused.
func TestDrainCredentials(t *testing.T) {
	file := filepath.Join(t.TempDir(), "auth")
	if err := os.WriteFile(file, []byte("fromfile:pw:with:colons\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RELAYQ_DRAIN_AUTH", "fromenv:pw")
	for _, tc := range []struct {
		name       string
		f          drainFlags
		user, pass string
		bad        bool
	}{
		{"flag", drainFlags{auth: "relay:s3cret"}, "relay", "s3cret", false},
		{"file", drainFlags{authFile: file}, "fromfile", "pw:with:colons", false},
		{"env", drainFlags{}, "fromenv", "pw", false},
		{"no user", drainFlags{auth: ":pw"}, "", "", true},
		{"no colon", drainFlags{auth: "relay"}, "", "", true},
	} {
		req, err := drainRequest(tc.f)
		if tc.bad != (err != nil) || req.Username != tc.user || req.Password != tc.pass {
			t.Errorf("%s: %q %q %v", tc.name, req.Username, req.Password, err)
		}
	}
}

// TestDrainCommandNeedsPeer: without --to (or --status, --stop) the
// command says what it needs before asking the relay anything.
func TestDrainCommandNeedsPeer(t *testing.T) {
	handled, err := drainCmd([]string{"drain", "--admin", "http://127.0.0.1:1"}, io.Discard)
	if !handled || err == nil || !strings.Contains(err.Error(), "--to HOST:PORT") {
		t.Fatalf("handled %v, err %v", handled, err)
	}
	if handled, _ := drainCmd([]string{"list"}, io.Discard); handled {
		t.Fatal("drainCmd took `queue list`")
	}
}

// The admin token from the environment is used but never printed: help
// shows every flag's default, and the token must not be one of them.
func TestAdminTokenNotInHelp(t *testing.T) {
	t.Setenv("RELAYQ_ADMIN_TOKEN", "s3cret-token")
	for _, args := range [][]string{{"drain", "--help"}, {"--help"}, {"retry", "--help"}} {
		var out strings.Builder
		if args[0] == "drain" {
			drainCmd(args, &out)
		} else {
			queueCmd(args, &out)
		}
		if strings.Contains(out.String(), "s3cret-token") {
			t.Errorf("relayq queue %s printed the admin token:\n%s", strings.Join(args, " "), out.String())
		}
		if out.Len() == 0 {
			t.Errorf("relayq queue %s printed no help", strings.Join(args, " "))
		}
	}
}
