package config

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/relayq/relayq/internal/tenant"
)

// twoTenants is a configuration with two tenants, billing and shop, on
// their own keys, users and domains.
const twoTenants = "submission:\n  allow_insecure_auth: true\n" +
	"  api_keys:\n    - {name: billing, key_hash: \"" + aliceHash + "\"}\n    - {name: shop, key_hash: \"" + aliceHash + "\"}\n" +
	"  users:\n    - {username: billing-smtp, password_hash: \"" + aliceHash + "\"}\n"

func TestTenantsLoad(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	writeFile(t, dir, "relayq.yaml", twoTenants+`tenants:
  - name: billing
    api_keys: [billing]
    users: [billing-smtp]
    domains: [Billing.Example.ORG.]
    quotas: {per_minute: 600, per_day: 50000, per_month: 1000000, over: hold}
    suppression: tenant
    reputation: {window: 1h, min_volume: 10, complaint_pause: 0.01, resume: 30m}
  - name: shop
    api_keys: shop
    domains: [shop.example.net]
events:
  webhooks:
    - {url: "https://billing.example.org/hooks", secret: s, tenant: billing}
`)
	c, err := Load(filepath.Join(dir, "relayq.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []tenant.Tenant{{
		Name: "billing", APIKeys: []string{"billing"}, Users: []string{"billing-smtp"}, Domains: []string{"billing.example.org"},
		Quotas:      tenant.Quotas{PerMinute: 600, PerDay: 50000, PerMonth: 1000000, Over: tenant.Hold},
		Suppression: tenant.Own,
		Reputation: tenant.Reputation{Window: 3600e9, MinVolume: 10, BounceWarn: 0.02, BouncePause: 0.05,
			ComplaintWarn: 0.001, ComplaintPause: 0.01, Resume: 1800e9},
	}, {
		Name: "shop", APIKeys: []string{"shop"}, Domains: []string{"shop.example.net"},
		Reputation: tenant.Reputation{Window: 24 * 3600e9, MinVolume: 200, BounceWarn: 0.02, BouncePause: 0.05,
			ComplaintWarn: 0.001, ComplaintPause: 0.003},
	}}
	if !reflect.DeepEqual(c.Tenants, want) {
		t.Errorf("tenants =\n%+v\nwant\n%+v", c.Tenants, want)
	}
	if c.Events.Webhooks[0].Tenant != "billing" {
		t.Errorf("webhook tenant = %q", c.Events.Webhooks[0].Tenant)
	}
}

// Without a tenants section there are none: every credential is the
// default tenant's.
func TestTenantsNoneByDefault(t *testing.T) {
	clearEnv(t)
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tenants) != 0 {
		t.Errorf("tenants = %+v", c.Tenants)
	}
}

func TestLoadRejectsBadTenants(t *testing.T) {
	wantRejected(t, []badConfig{{
		name: "key in two tenants",
		file: twoTenants + "tenants:\n  - {name: a, api_keys: [billing]}\n  - {name: b, api_keys: [shop, billing]}\n",
		want: `config $FILE: tenants[1].api_keys[1]: "billing" is already tenant "a"'s: a credential belongs to one tenant`,
	}, {
		name: "unknown key",
		file: twoTenants + "tenants:\n  - {name: a, api_keys: [biling]}\n",
		want: `config $FILE: tenants[0].api_keys[0]: "biling" is not in submission.api_keys`,
	}, {
		name: "user in two tenants",
		file: twoTenants + "tenants:\n  - {name: a, users: [billing-smtp]}\n  - {name: b, users: [billing-smtp]}\n",
		want: `config $FILE: tenants[1].users[0]: "billing-smtp" is already tenant "a"'s: a credential belongs to one tenant`,
	}, {
		name: "domain in two tenants",
		file: "tenants:\n  - {name: a, domains: [example.org]}\n  - {name: b, domains: [example.org]}\n",
		want: `config $FILE: tenants[1].domains: domain "example.org" is also tenant "a"'s; set shared_domains: true in both to allow it`,
	}, {
		name: "domain shared by one side only",
		file: "tenants:\n  - {name: a, domains: [example.org], shared_domains: true}\n  - {name: b, domains: [example.org]}\n",
		want: `config $FILE: tenants[1].domains: domain "example.org" is also tenant "a"'s; set shared_domains: true in both to allow it`,
	}, {
		name: "quota zero",
		file: "tenants:\n  - {name: a, quotas: {per_day: 0}}\n",
		want: `config $FILE: tenants[0].quotas.per_day: 0 must be a whole number of at least 1 (leave the key out for no quota)`,
	}, {
		name: "quota negative",
		file: "tenants:\n  - {name: a, quotas: {per_minute: -5}}\n",
		want: `config $FILE: tenants[0].quotas.per_minute: -5 must be a whole number of at least 1 (leave the key out for no quota)`,
	}, {
		name: "over",
		file: "tenants:\n  - {name: a, quotas: {per_day: 5, over: drop}}\n",
		want: `config $FILE: tenants[0].quotas.over: "drop" is neither refuse nor hold`,
	}, {
		name: "tenant twice",
		file: "tenants:\n  - {name: a}\n  - {name: a}\n",
		want: `config $FILE: tenants[1].name: tenant "a" is listed twice`,
	}, {
		name: "unknown key in a tenant",
		file: "tenants:\n  - {name: a, quota: {per_day: 5}}\n",
		want: `config $FILE: tenants[0]: unknown key "quota" (want name, api_keys, users, domains, shared_domains, dkim_keys, quotas, suppression, reputation, stream)`,
	}, {
		name: "scope",
		file: "tenants:\n  - {name: a, suppression: mine}\n",
		want: `config $FILE: tenants[0].suppression: "mine" is neither tenant nor global`,
	}, {
		name: "rate",
		file: "tenants:\n  - {name: a, reputation: {bounce_pause: 5}}\n",
		want: `config $FILE: tenants[0].reputation.bounce_pause: 5 is not a fraction from 0 to 1 (0.003 is 0.3 %)`,
	}, {
		name: "unknown stream",
		file: "tenants:\n  - {name: a, stream: bulk}\n",
		want: `config $FILE: tenants[0].stream: tenant "a" names stream "bulk", which streams does not list`,
	}, {
		name: "unknown dkim key",
		file: "tenants:\n  - {name: a, dkim_keys: [\"example.org:s1\"]}\n",
		want: `config $FILE: tenants[0].dkim_keys[0]: example.org:s1 is not a key of dkim.keys`,
	}, {
		name: "webhook of an unknown tenant",
		file: "tenants:\n  - {name: a}\nevents:\n  webhooks:\n    - {url: \"https://x.example/h\", secret: s, tenant: b}\n",
		want: `config $FILE: events.webhooks[0].tenant: "b" is not a tenant listed under tenants`,
	}})
}
