package config

import (
	"os"
	"path/filepath"
	"testing"
)

// An SES key is read with its secret from its file and tied to an API key.
func TestSESKeysLoaded(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "ses.secret")
	if err := os.WriteFile(secret, []byte("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, dir, "relayq.yaml", "submission:\n  allow_insecure_auth: true\n  api_keys:\n    - {name: billing, key_hash: \""+aliceHash+"\"}\n"+
		"  ses_keys:\n    - {access_key_id: AKIAEXAMPLE0000000001, secret_file: "+secret+", api_key: billing}\n")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Submission.SESKeys; len(got) != 1 || got[0].Secret != "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" || got[0].APIKey != "billing" {
		t.Errorf("%+v", got)
	}
}

// Each mistake in ses_keys is refused naming the key, the entry and the file.
func TestSESKeysRejected(t *testing.T) {
	const head = "submission:\n  allow_insecure_auth: true\n  api_keys:\n    - {name: billing, key_hash: \"" + aliceHash + "\"}\n  ses_keys:\n"
	wantRejected(t, []badConfig{
		{
			name: "short key ID",
			file: head + "    - {access_key_id: AKIA, secret_file: $DIR/x, api_key: billing}\n",
			want: `config $FILE: submission.ses_keys[0].access_key_id: "AKIA" is not an access key ID (16 to 128 letters, digits or '_')`,
		},
		{
			name: "no such API key",
			file: head + "    - {access_key_id: AKIAEXAMPLE0000000001, secret_file: $DIR/x, api_key: other}\n",
			want: `config $FILE: submission.ses_keys[0].api_key: "other" names no entry of submission.api_keys (its messages take that key's stream and limits)`,
		},
		{
			name: "missing secret file",
			file: head + "    - {access_key_id: AKIAEXAMPLE0000000001, secret_file: $DIR/none, api_key: billing}\n",
			want: `config $FILE: submission.ses_keys[0].secret_file: open $DIR/none: no such file or directory`,
		},
		{
			name: "unknown field",
			file: head + "    - {access_key_id: AKIAEXAMPLE0000000001, secret: x, api_key: billing}\n",
			want: `config $FILE: submission.ses_keys[0]: unknown key "secret" (want access_key_id, secret_file, api_key)`,
		},
	})
}
