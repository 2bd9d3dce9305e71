package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/tenant"
	"github.com/relayq/relayq/queue"
)

// loadQuota starts the tenants' quota counter from the counts the queue
// kept with the messages, after dropping the windows that have ended.
func loadQuota(store *queue.Store, cfg *config.Config) (*tenant.Counter, error) {
	now := time.Now()
	if err := store.Counters().Prune(func(name string) bool { return tenant.Current(name, now) }); err != nil {
		return nil, fmt.Errorf("tenants: quota counters: %w", err)
	}
	counts, err := store.Counters().Load("")
	if err != nil {
		return nil, fmt.Errorf("tenants: quota counters: %w", err)
	}
	c := tenant.NewCounter(counts)
	c.SetDirectory(tenant.New(cfg.Tenants))
	return c, nil
}

// tenantsAPI reports the configured tenants and their quota use for the
// admin API, from the directory the counter applies now.
func tenantsAPI(c *tenant.Counter, rw *reputationWatch) admin.Tenants {
	return func() []admin.Tenant {
		d, now := c.Directory(), time.Now()
		out := []admin.Tenant{}
		for _, name := range d.Names() {
			t, _ := d.Get(name)
			m, day, month := c.Used(name, now)
			var st tenant.State
			if rw != nil {
				st = rw.mon.State(name)
			}
			out = append(out, admin.Tenant{Name: t.Name, APIKeys: nonNil(t.APIKeys), Users: nonNil(t.Users), Domains: nonNil(t.Domains),
				Stream: t.Stream, Suppression: t.Suppression.String(), State: "active", Resume: rw.resumeFunc(name),
				Quotas: admin.TenantQuotas{PerMinute: t.Quotas.PerMinute, PerDay: t.Quotas.PerDay, PerMonth: t.Quotas.PerMonth,
					Over: t.Quotas.Over.String(), UsedMinute: m, UsedDay: day, UsedMonth: month}})
			out[len(out)-1].State, out[len(out)-1].Reason = st.Level.String(), st.Reason
			if rw != nil {
				sent, bounced, complained := rw.mon.Rates(name, t.Reputation.Window, now)
				out[len(out)-1].Rates = admin.TenantRates{Window: t.Reputation.Window.String(), Sent: sent, Bounced: bounced, Complained: complained}
			}
		}
		return out
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// `relayq tenants list|show NAME`: a running relay's tenants, through its
// admin API.
func tenantsCmd(args []string, out io.Writer) error {
	fs := newFlagSet("tenants", out)
	var a adminFlags
	a.define(fs)
	pos, err := parseInterleaved(fs, args)
	if helpAsked(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errors.New("tenants: missing command (list, show NAME or resume NAME)")
	}
	c, err := a.client(requestTimeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	return explain(runTenants(ctx, c, pos[0], pos[1:], out), a.admin)
}

func runTenants(ctx context.Context, c *admin.Client, cmd string, rest []string, out io.Writer) error {
	switch {
	case cmd == "list" && len(rest) == 0:
		ts, err := c.Tenants(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TENANT\tSTATE\tTODAY\tMONTH\tDOMAINS")
		for _, t := range ts {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, stateOf(t), used(t.Quotas.UsedDay, t.Quotas.PerDay),
				used(t.Quotas.UsedMonth, t.Quotas.PerMonth), strings.Join(t.Domains, ","))
		}
		return tw.Flush()
	case cmd == "resume" && len(rest) == 1:
		if err := c.ResumeTenant(ctx, rest[0]); err != nil {
			return err
		}
		_, err := fmt.Fprintf(out, "%s: resumed\n", rest[0])
		return err
	case cmd == "show" && len(rest) == 1:
		t, err := c.Tenant(ctx, rest[0])
		if err != nil {
			return err
		}
		q := t.Quotas
		_, err = fmt.Fprintf(out, "Tenant:      %s\nState:       %s\nRates:       %d sent, %d bounced, %d complaints in %s\nAPI keys:    %s\nUsers:       %s\nDomains:     %s\nStream:      %s\nSuppression: %s\nQuotas (%s): minute %s, day %s, month %s\n",
			t.Name, stateOf(t), t.Rates.Sent, t.Rates.Bounced, t.Rates.Complained, t.Rates.Window, strings.Join(t.APIKeys, ", "), strings.Join(t.Users, ", "), strings.Join(t.Domains, ", "), t.Stream, t.Suppression,
			q.Over, used(q.UsedMinute, q.PerMinute), used(q.UsedDay, q.PerDay), used(q.UsedMonth, q.PerMonth))
		return err
	}
	return fmt.Errorf("tenants: want list, show NAME or resume NAME (got %s)", strings.Join(append([]string{cmd}, rest...), " "))
}

// stateOf is a tenant's state with its reason: "paused (bounce rate ...)".
func stateOf(t admin.Tenant) string {
	if t.Reason == "" {
		return t.State
	}
	return t.State + " (" + t.Reason + ")"
}

// used is "12/600", or "12" without a quota.
func used(n, limit int) string {
	if limit == 0 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d/%d", n, limit)
}
