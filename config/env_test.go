package config

import "testing"

// The command-line tools' own variables sit next to the relay's in the same
// shell; they must not stop the relay from starting.
func TestClientVariablesAreNotMisspellings(t *testing.T) {
	clearEnv(t)
	t.Setenv("RELAYQ_ADMIN_URL", "http://127.0.0.1:8025")
	t.Setenv("RELAYQ_ADMIN_TOKEN", "secret")
	t.Setenv("RELAYQ_SENDMAIL_SERVER", "127.0.0.1:25")
	t.Setenv("RELAYQ_SENDMAIL_USERNAME", "app")
	t.Setenv("RELAYQ_SENDMAIL_PASSWORD", "pw")
	if _, err := Load(""); err != nil {
		t.Fatal(err)
	}
}

// `relayq queue drain` reads the peer's credentials from RELAYQ_DRAIN_AUTH;
// an operator who exports it for the drain must still be able to run serve,
// check-config and sendmail in the same shell.
func TestDrainAuthIsAClientVariable(t *testing.T) {
	clearEnv(t)
	t.Setenv("RELAYQ_DRAIN_AUTH", "relay:secret")
	if _, err := Load(""); err != nil {
		t.Fatal(err)
	}
}
