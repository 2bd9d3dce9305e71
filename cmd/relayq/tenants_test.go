package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/tenant"
)

// `relayq tenants list` and `show` print each tenant's quota use from the
// running relay's counter; an unknown tenant is an error naming it.
func TestTenantsCommands(t *testing.T) {
	c := tenant.NewCounter(nil)
	c.SetDirectory(tenant.New([]tenant.Tenant{
		{Name: "billing", APIKeys: []string{"bk"}, Domains: []string{"billing.example.org"}, Quotas: tenant.Quotas{PerDay: 100}, Suppression: tenant.Own},
		{Name: "shop", Users: []string{"shop-smtp"}},
	}))
	for range 3 {
		if _, _, err := c.Admit("billing", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	ts := httptest.NewServer(admin.NewHandler(admin.Options{Logger: quietLog, Tenants: tenantsAPI(c, nil)}))
	defer ts.Close()
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := tenantsCmd(append(args, "--admin", ts.URL), &out)
		return out.String(), err
	}
	out, err := run("list")
	if err != nil || !strings.Contains(out, "billing  active  3/100") || !strings.Contains(out, "shop") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	out, err = run("show", "billing")
	if err != nil || !strings.Contains(out, "Suppression: tenant") || !strings.Contains(out, "day 3/100") {
		t.Fatalf("show: %v\n%s", err, out)
	}
	if _, err := run("show", "nosuch"); err == nil || !strings.Contains(err.Error(), `tenant "nosuch" is not configured`) {
		t.Fatalf("unknown tenant: %v", err)
	}
	cl := &admin.Client{BaseURL: ts.URL}
	if list, err := cl.Tenants(context.Background()); err != nil || len(list) != 2 || list[0].Quotas.UsedDay != 3 {
		t.Errorf("GET /api/v1/tenants: %+v %v", list, err)
	}
}
