package sendmail

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"
)

// Flags and environment win before any file is read: the file is read
// only for what they leave open, and a file the caller may not read stops
// the command only when the server has to come from it.
func TestRelayConfigPrecedence(t *testing.T) {
	sys, _ := os.Hostname()
	denied := fmt.Errorf("config /etc/relayq/relayq.yaml: %w", fs.ErrPermission)
	file := RelayConfig{Server: "127.0.0.1:2525", Hostname: "file.example.org"}
	for _, tc := range []struct {
		name       string
		args       []string
		vars       map[string]string
		fileErr    error
		wantRead   bool
		wantServer string
		wantHost   string
		wantErr    bool
	}{
		{"all from the file", nil, nil, nil, true, "127.0.0.1:2525", "file.example.org", false},
		{"flag server, file hostname", []string{"--server", "10.0.0.1:25"}, nil, nil, true, "10.0.0.1:25", "file.example.org", false},
		{"flag and environment give both", []string{"--server", "10.0.0.1:25"}, map[string]string{"RELAYQ_HOSTNAME": "env.example.org"}, nil, false, "10.0.0.1:25", "env.example.org", false},
		{"environment server, file denied", nil, map[string]string{"RELAYQ_SENDMAIL_SERVER": "10.0.0.2:25"}, denied, true, "10.0.0.2:25", sys, false},
		{"no server, file denied", nil, nil, denied, true, "", "", true},
		{"flag server, file broken", []string{"--server", "10.0.0.1:25"}, nil, errors.New("config f: hostname: bad"), true, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(append(tc.args, "-t"))
			if err != nil {
				t.Fatal(err)
			}
			read := false
			env := Env{
				Getenv: func(k string) string { return tc.vars[k] },
				LoadConfig: func(string) (RelayConfig, error) {
					read = true
					if tc.fileErr != nil {
						return RelayConfig{}, tc.fileErr
					}
					return file, nil
				},
			}
			rc, err := relayConfig(o, env)
			if read != tc.wantRead || (err != nil) != tc.wantErr {
				t.Fatalf("file read %v, error %v; want read %v, error %v", read, err, tc.wantRead, tc.wantErr)
			}
			if err == nil && (rc.Server != tc.wantServer || rc.Hostname != tc.wantHost) {
				t.Errorf("got %+v, want server %s hostname %s", rc, tc.wantServer, tc.wantHost)
			}
		})
	}
}
