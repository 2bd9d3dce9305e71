package delivery

import (
	"testing"

	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
)

// TestCheckScope: a suspension is refused exactly when no mail can be
// shaped under its scope with the routes in force, and the refusal names
// the scope that mail really uses.
func TestCheckScope(t *testing.T) {
	wild := route.NewRouter(route.Options{Routes: map[string]string{"*": "127.0.0.1:2526", "s2.test": "127.0.0.1:2527"}})
	smart := route.NewRouter(route.Options{Smarthost: smtpclient.Smarthost{Address: "127.0.0.1:2526"}})
	mx := route.NewRouter(route.Options{Routes: map[string]string{"s2.test": "127.0.0.1:2527"}})
	providers := []string{"google", "microsoft"}
	tests := []struct {
		name   string
		r      *route.Router
		scope  string
		refuse string // "" accepted
	}{
		{"wildcard route hides a domain", wild, "domain:s1.test", `scope domain:s1.test is never used: mail to s1.test is shaped as domain:* (route "*")`},
		{"wildcard route: its own key", wild, "domain:*", ""},
		{"wildcard route: a listed domain", wild, "domain:s2.test", ""},
		{"wildcard route hides providers", wild, "provider:google", `scope provider:google is never used: mail without a route of its own is shaped as domain:* (route "*"), and providers apply to MX delivery only`},
		{"smarthost hides a domain", smart, "domain:s1.test", "scope domain:s1.test is never used: mail to s1.test is shaped as domain:* (the smarthost)"},
		{"smarthost: its key", smart, "domain:*", ""},
		{"MX: any domain", mx, "domain:s1.test", ""},
		{"MX: a routed domain", mx, "domain:s2.test", ""},
		{"MX: a configured provider", mx, "provider:google", ""},
		{"MX: an unknown provider", mx, "provider:yahoo", "scope provider:yahoo is never used: yahoo is not in shaping.providers (configured: google, microsoft)"},
		{"MX: no wildcard", mx, "domain:*", `scope domain:* is never used: there is no route "*" or smarthost; mail is shaped by its domain (domain:NAME) or provider`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := shaping.ParseScope(tt.scope)
			if err != nil {
				t.Fatal(err)
			}
			err = checkScope(tt.r, providers, sc)
			switch {
			case tt.refuse == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.refuse != "" && (err == nil || err.Error() != tt.refuse):
				t.Fatalf("got %v, want %q", err, tt.refuse)
			}
		})
	}
}
