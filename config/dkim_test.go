package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/relayq/relayq/internal/dkim"
)

func writeDKIMKey(t *testing.T, dir, name string) string {
	t.Helper()
	k, err := dkim.GenerateKey(dkim.KeyEd25519, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := dkim.WriteKeyFile(p, k); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDKIMKeys(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	k1, k2 := writeDKIMKey(t, dir, "a.pem"), writeDKIMKey(t, dir, "b.pem")
	path := writeFile(t, dir, "relayq.yaml", "dkim:\n  keys:\n"+
		"    - {domain: Example.ORG., selector: s1, private_key_file: "+k1+"}\n"+
		"    - {domain: example.org, selector: ed1, private_key_file: "+k2+"}\n"+
		"  headers: [From, Subject]\n  expiration: 72h\n")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []DKIMKey{{"example.org", "s1", k1}, {"example.org", "ed1", k2}}
	if !reflect.DeepEqual(c.DKIM.Keys, want) || len(c.DKIM.Headers) != 2 || c.DKIM.Expiration.Hours() != 72 {
		t.Fatalf("DKIM = %+v", c.DKIM)
	}
	t.Setenv("RELAYQ_DKIM_KEYS", "example.net:s2:"+k2)
	c, err = Load(path)
	if err != nil || !reflect.DeepEqual(c.DKIM.Keys, []DKIMKey{{"example.net", "s2", k2}}) {
		t.Fatalf("from the environment: %+v %v", c.DKIM.Keys, err)
	}
}

// A key file that is missing or not a key is a config error naming the
// key and the file, so check-config refuses it.
func TestDKIMKeyErrors(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	good := writeDKIMKey(t, dir, "good.pem")
	missing := filepath.Join(dir, "missing.pem")
	notKey := writeFile(t, dir, "cert.pem", "hello")
	tests := []struct{ keys, want string }{
		{"{domain: example.org, selector: s, private_key_file: " + missing + "}", "dkim.keys[0].private_key_file: dkim: key open " + missing + ": no such file or directory"},
		{"{domain: example.org, selector: s, private_key_file: " + notKey + "}", "dkim.keys[0].private_key_file: dkim: key " + notKey + ": no PEM block"},
		{"{domain: example.org, selector: s, private_key_file: " + good + "}, {domain: example.org, selector: s, private_key_file: " + good + "}", "dkim.keys[1]: domain example.org selector s is listed twice"},
		{"{domain: 'not a domain', selector: s, private_key_file: " + good + "}", "dkim.keys[0].domain:"},
		{"{domain: example.org, selector: s, key: " + good + "}", `dkim.keys[0]: unknown key "key"`},
	}
	for _, tt := range tests {
		path := writeFile(t, dir, "relayq.yaml", "dkim:\n  keys: ["+tt.keys+"]\n")
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), "config "+path+": "+tt.want) {
			t.Errorf("keys %s: error %v, want one containing %q", tt.keys, err, tt.want)
		}
	}
}
