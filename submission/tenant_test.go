package submission

import (
	"strings"
	"testing"

	"github.com/emersion/go-sasl"

	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/internal/tenant"
)

// tenantPolicy has two tenants on SMTP users, billing (domain
// billing.example.org, stream bulk by default) and shop
// (shop.example.net), and a user in no tenant.
func tenantPolicy(t testing.TB, o *Options) {
	o.AllowInsecureAuth = true
	o.Policy.Streams = []string{"transactional", "bulk"}
	o.Policy.DefaultStream = "transactional"
	o.Policy.Users = []User{{Username: "bill", PasswordHash: hash(t, "pw")}, {Username: "shop", PasswordHash: hash(t, "pw")},
		{Username: "plain", PasswordHash: hash(t, "pw")}}
	o.Policy.Tenants = tenant.New([]tenant.Tenant{
		{Name: "billing", Users: []string{"bill"}, Domains: []string{"billing.example.org"}, Stream: "bulk"},
		{Name: "shop", Users: []string{"shop"}, Domains: []string{"shop.example.net"}},
	})
}

// sendAs sends one message as SMTP user with From: from over a new
// session; the reply and error of DATA.
func sendAs(t *testing.T, env *testEnv, user, from, extra string) (string, error) {
	t.Helper()
	c := dial(t, env.addr)
	if err := c.Auth(sasl.NewPlainClient("", user, "pw")); err != nil {
		t.Fatal(err)
	}
	return send(c, from, []string{"b@example.net"}, "From: <"+from+">\r\n"+extra+"Subject: hi\r\n\r\nhi\r\n")
}

// The Acceptor resolves a credential's tenant once and stores it in the
// envelope; a tenant's stream default applies when the header names none,
// and a credential in no tenant is the default tenant's, as before.
func TestAcceptorResolvesTenant(t *testing.T) {
	env := startServer(t, func(o *Options) { tenantPolicy(t, o) })
	for _, tc := range []struct {
		user, from, header string
		want               identity.Sender
	}{
		{"bill", "a@billing.example.org", "", identity.Sender{Tenant: "billing", Stream: "bulk", Credential: identity.Credential{Kind: identity.User, Name: "bill"}}},
		{"bill", "a@billing.example.org", "X-Relayq-Stream: transactional\r\n", identity.Sender{Tenant: "billing", Stream: "transactional", Credential: identity.Credential{Kind: identity.User, Name: "bill"}}},
		{"shop", "a@shop.example.net", "", identity.Sender{Tenant: "shop", Stream: "transactional", Credential: identity.Credential{Kind: identity.User, Name: "shop"}}},
		{"plain", "a@anything.example", "", identity.Sender{Stream: "transactional", Credential: identity.Credential{Kind: identity.User, Name: "plain"}}},
	} {
		reply, err := sendAs(t, env, tc.user, tc.from, tc.header)
		if err != nil {
			t.Fatalf("%s: %v", tc.user, err)
		}
		e, err := env.store.Get(queueIDFrom(t, reply))
		if err != nil {
			t.Fatal(err)
		}
		if e.Sender != tc.want {
			t.Errorf("%s %q: sender %+v, want %+v", tc.user, tc.header, e.Sender, tc.want)
		}
	}
}

// A tenant sends only as its own domains: another domain (another
// tenant's, or nobody's), a second From: mailbox elsewhere, or no From: at
// all is refused at DATA with 550 5.7.1 naming the domain; a credential
// in no tenant sends as any domain, as before tenants.
func TestTenantFromDomains(t *testing.T) {
	env := startServer(t, func(o *Options) { tenantPolicy(t, o) })
	for _, tc := range []struct {
		user, from string
		code       int
		text       string
	}{
		{"bill", "a@billing.example.org", 250, ""},
		{"bill", "a@BILLING.example.org", 250, ""},
		{"bill", "a@shop.example.net", 550, "From: domain shop.example.net is not one tenant billing may send as"},
		{"bill", "a@sub.billing.example.org", 550, "From: domain sub.billing.example.org is not one tenant billing may send as"},
		{"shop", "a@billing.example.org", 550, "From: domain billing.example.org is not one tenant shop may send as"},
		{"plain", "a@billing.example.org", 250, ""},
	} {
		_, err := sendAs(t, env, tc.user, tc.from, "")
		if got := smtpCode(err); tc.code == 250 && err != nil || tc.code != 250 && (got != tc.code || enhanced(err) != "5.7.1" || !strings.Contains(err.Error(), tc.text)) {
			t.Errorf("%s as %s: %v, want %d %s", tc.user, tc.from, err, tc.code, tc.text)
		}
	}
	c := dial(t, env.addr)
	if err := c.Auth(sasl.NewPlainClient("", "bill", "pw")); err != nil {
		t.Fatal(err)
	}
	for _, hdr := range []string{"From: a@billing.example.org, b@shop.example.net\r\n", "Subject: no from\r\n", "From: not an address\r\n"} {
		if _, err := send(c, "a@billing.example.org", []string{"b@example.net"}, hdr+"\r\nhi\r\n"); smtpCode(err) != 550 {
			t.Errorf("%q: %v, want 550", hdr, err)
		}
	}
	env.wantQueued(t, 3, "only the allowed messages")
}

// FuzzFromDomains: whatever a client puts in From:, reading its domains
// never fails and gives one domain or more per field, lower case, each
// either "" (unreadable) or the part after an address's last '@'.
func FuzzFromDomains(f *testing.F) {
	f.Add("App <app@Billing.Example.org>")
	f.Add("a@x.example, \"B, C\" <b@y.example>")
	f.Add("=?utf-8?q?caf=C3=A9?= <x@y>")
	f.Add("not an address")
	f.Fuzz(func(t *testing.T, from string) {
		ds := fromDomains([]string{from})
		if len(ds) == 0 {
			t.Fatal("no domain, not even the unreadable one")
		}
		for _, d := range ds {
			if d != strings.ToLower(d) {
				t.Fatalf("domain %q not lower case", d)
			}
		}
	})
}
