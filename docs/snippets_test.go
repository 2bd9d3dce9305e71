package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/relayq/relayq/config"
)

// The HTTP API's configuration snippet starts a relay that the curl
// examples below it (plain http://) can use: it used to be refused, keys
// would travel in clear.
func TestHTTPAPISnippetLoads(t *testing.T) {
	b, err := os.ReadFile("http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("http-api.md has no yaml block")
	}
	if !strings.Contains(string(b), "curl -s http://127.0.0.1:8587/") {
		t.Fatal("the curl examples no longer use plain http://127.0.0.1:8587; revisit this test")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte("billing.secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	yaml := strings.Replace(string(m[1]), "$2a$10$...", string(hash), 1)
	path := filepath.Join(t.TempDir(), "relayq.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(path); err != nil {
		t.Errorf("the snippet does not start a relay: %v\n%s", err, yaml)
	}
}
