package e2e

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// runRelayq runs the built binary with env added to a clean environment and
// returns its combined output and exit code.
func runRelayq(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(relayqBin, args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Dir = t.TempDir()
	// Standard output first, so a --json answer decodes from the start.
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String() + stderr.String(), code
}

// What a new user types first: help answers with success, a config file
// given without --config and a misspelt variable stop relayq before it
// runs on defaults it was not meant to.
func TestCommandLineTraps(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"serve --help", nil, []string{"serve", "--help"}, 0, "examples:"},
		{"queue delete --help", nil, []string{"queue", "delete", "--help"}, 0, "usage: relayq queue delete"},
		{"help check-config", nil, []string{"help", "check-config"}, 0, "--strict"},
		{"positional config", nil, []string{"serve", "relayq.yaml"}, 1, "give the config file with --config relayq.yaml"},
		{"positional check-config", nil, []string{"check-config", "relayq.yaml"}, 1, "--config relayq.yaml"},
		{"misspelt variable", []string{"RELAYQ_RETRY_MAX_DELAYS=10m"}, []string{"serve"}, 1, "environment RELAYQ_RETRY_MAX_DELAYS: not a relayq setting (did you mean RELAYQ_RETRY_MAX_DELAY?)"},
		{"strict warnings", []string{"RELAYQ_SUBMISSION_TRUSTED_NETWORKS=0.0.0.0/0"}, []string{"check-config", "--strict"}, 1, "an open relay"},
		{"version", nil, []string{"version"}, 0, "relayq "},
		{"completion", nil, []string{"completion", "bash"}, 0, "complete -F _relayq relayq"},
		{"apikey new --help", nil, []string{"apikey", "new", "--help"}, 0, "usage: relayq apikey new NAME"},
		{"dkim --help", nil, []string{"dkim", "--help"}, 0, "usage: relayq dkim"},
		{"dkim check --help", nil, []string{"dkim", "check", "--help"}, 0, "usage: relayq dkim check"},
		{"sendmail --help", nil, []string{"sendmail", "--help"}, 0, "usage: relayq sendmail"},
		{"queue suspensions --help", nil, []string{"queue", "suspensions", "--help"}, 0, "usage: relayq queue suspensions"},
		{"queue resume --help", nil, []string{"queue", "resume", "--help"}, 0, "usage: relayq queue resume"},
		{"queue lst", nil, []string{"queue", "lst"}, 1, "(did you mean list?)"},
		{"unknown command", nil, []string{"qeue"}, 2, "(did you mean queue?)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runRelayq(t, tc.env, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("relayq %s: exit %d, want %d; output lacks %q:\n%s", strings.Join(tc.args, " "), code, tc.code, tc.want, out)
			}
		})
	}
}
