package tenant

import (
	"testing"

	"github.com/relayq/relayq/internal/identity"
)

func testDirectory() *Directory {
	return New([]Tenant{
		{Name: "billing", APIKeys: []string{"bk"}, Users: []string{"bu"}, Domains: []string{"billing.example.org"},
			Keys: []Key{{"billing.example.org", "s1"}}, Stream: "bulk", Suppression: Own},
		{Name: "shop", APIKeys: []string{"sk"}, Domains: []string{"shop.example.net"}, Keys: []Key{{"example.net", "shared"}}},
	})
}

func TestDirectoryOf(t *testing.T) {
	d := testDirectory()
	for _, tc := range []struct {
		c            identity.Credential
		name, stream string
	}{
		{identity.Credential{Kind: identity.APIKey, Name: "bk"}, "billing", "bulk"},
		{identity.Credential{Kind: identity.User, Name: "bu"}, "billing", "bulk"},
		{identity.Credential{Kind: identity.User, Name: "bk"}, "", ""}, // a user is not the key of that name
		{identity.Credential{Kind: identity.APIKey, Name: "sk"}, "shop", ""},
		{identity.Credential{}, "", ""},
	} {
		if n, s := d.Of(tc.c); n != tc.name || s != tc.stream {
			t.Errorf("Of(%v) = %q, %q; want %q, %q", tc.c, n, s, tc.name, tc.stream)
		}
	}
	var none *Directory
	if n, _ := none.Of(identity.Credential{Kind: identity.APIKey, Name: "bk"}); n != "" {
		t.Errorf("nil directory: %q", n)
	}
}

func TestDirectoryMaySendAsAndSignsWith(t *testing.T) {
	d := testDirectory()
	for _, tc := range []struct {
		tenant, domain string
		want           bool
	}{
		{"billing", "billing.example.org", true},
		{"billing", "Billing.Example.org.", true},
		{"billing", "x.billing.example.org", false},
		{"billing", "shop.example.net", false},
		{"billing", "", false},
		{"", "shop.example.net", true},
		{"unknown", "anything.example", true},
	} {
		if got := d.MaySendAs(tc.tenant, tc.domain); got != tc.want {
			t.Errorf("MaySendAs(%q, %q) = %v", tc.tenant, tc.domain, got)
		}
	}
	for _, tc := range []struct {
		tenant, domain, sel string
		want                bool
	}{
		{"billing", "billing.example.org", "S1", true},
		{"billing", "example.net", "shared", false},
		{"shop", "example.net", "shared", true},
		{"shop", "billing.example.org", "s1", false},
		{"", "billing.example.org", "s1", false}, // a tenant's key never signs the default tenant's mail
		{"", "other.example", "s", true},
	} {
		if got := d.SignsWith(tc.tenant, tc.domain, tc.sel); got != tc.want {
			t.Errorf("SignsWith(%q, %s:%s) = %v", tc.tenant, tc.domain, tc.sel, got)
		}
	}
	if d.Scope("billing") != Own || d.Scope("shop") != Global || d.Scope("") != Global {
		t.Error("scopes")
	}
}
