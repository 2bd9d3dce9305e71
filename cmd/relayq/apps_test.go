package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// `relayq apikey new NAME` prints a key starting with its name and a
// bcrypt hash of the whole key, ready to paste into submission.api_keys.
func TestAPIKeyNew(t *testing.T) {
	var out bytes.Buffer
	if err := apikeyCmd([]string{"new", "billing"}, &out); err != nil {
		t.Fatal(err)
	}
	key := regexp.MustCompile(`key:  (\S+)`).FindStringSubmatch(out.String())
	hash := regexp.MustCompile(`key_hash: "(\S+)"`).FindStringSubmatch(out.String())
	if key == nil || hash == nil || !strings.HasPrefix(key[1], "billing.") {
		t.Fatalf("output %q", out.String())
	}
	if err := bcrypt.CompareHashAndPassword([]byte(hash[1]), []byte(key[1])); err != nil {
		t.Fatalf("hash does not match key: %v", err)
	}
	for _, bad := range [][]string{{"new", "a.b"}, {"new"}, {"old", "x"}} {
		if err := apikeyCmd(bad, &out); err == nil {
			t.Errorf("apikey %v accepted", bad)
		}
	}
}

func TestSendmailName(t *testing.T) {
	for name, want := range map[string]bool{"/usr/sbin/sendmail": true, "sendmail": true, "relayq": false, "/usr/lib/sendmail": true} {
		if got := isSendmailName(name); got != want {
			t.Errorf("%s: %v", name, got)
		}
	}
}
