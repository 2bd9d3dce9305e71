package admin

import (
	"context"
	"net/http"
	"net/url"
)

// Tenant is one configured tenant as GET /api/v1/tenants shows it: its
// configuration and the quota it used in the windows holding now.
type Tenant struct {
	Name        string       `json:"name"`
	APIKeys     []string     `json:"api_keys"`
	Users       []string     `json:"users"`
	Domains     []string     `json:"domains"`
	Stream      string       `json:"stream,omitempty"`
	Suppression string       `json:"suppression"`
	Quotas      TenantQuotas `json:"quotas"`
	// State is "active", "warn" or "paused", and Reason why.
	State  string      `json:"state"`
	Reason string      `json:"reason,omitempty"`
	Rates  TenantRates `json:"rates"`
	// Resume lifts a pause (an operator's); false if it was not paused.
	Resume func() bool `json:"-"`
}

// TenantRates is a tenant's mail in its reputation window: messages with a
// final outcome, bounces and complaints.
type TenantRates struct {
	Window     string `json:"window,omitempty"`
	Sent       int    `json:"sent"`
	Bounced    int    `json:"bounced"`
	Complained int    `json:"complained"`
}

// TenantQuotas are a tenant's quotas (0: none) and what it used of each.
type TenantQuotas struct {
	PerMinute  int    `json:"per_minute,omitempty"`
	PerDay     int    `json:"per_day,omitempty"`
	PerMonth   int    `json:"per_month,omitempty"`
	Over       string `json:"over"`
	UsedMinute int    `json:"used_minute"`
	UsedDay    int    `json:"used_day"`
	UsedMonth  int    `json:"used_month"`
}

// Tenants reports the configured tenants now (cmd builds it from the
// directory and the quota counter).
type Tenants func() []Tenant

// TenantPage is the body of GET /api/v1/tenants.
type TenantPage struct {
	Tenants []Tenant `json:"tenants"`
}

func (h *handler) tenants(w http.ResponseWriter, r *http.Request) {
	if h.o.Tenants == nil {
		writeJSON(w, http.StatusOK, TenantPage{Tenants: []Tenant{}})
		return
	}
	ts := h.o.Tenants()
	if ts == nil {
		ts = []Tenant{}
	}
	writeJSON(w, http.StatusOK, TenantPage{Tenants: ts})
}

func (h *handler) tenant(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if h.o.Tenants != nil {
		for _, t := range h.o.Tenants() {
			if t.Name == name {
				writeJSON(w, http.StatusOK, t)
				return
			}
		}
	}
	writeError(w, http.StatusNotFound, "tenant "+quoteName(name)+" is not configured (tenants[].name)")
}

// resumeTenant is POST /api/v1/tenants/{name}/resume: an operator lifts
// a tenant's pause.
func (h *handler) resumeTenant(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if h.o.Tenants != nil {
		for _, t := range h.o.Tenants() {
			if t.Name != name {
				continue
			}
			if t.Resume == nil || !t.Resume() {
				writeError(w, http.StatusConflict, "tenant "+quoteName(name)+" is not paused")
				return
			}
			h.o.Logger.Info("admin: tenant resumed", "tenant", name, "remote", r.RemoteAddr)
			writeJSON(w, http.StatusOK, map[string]string{"tenant": name, "state": "active"})
			return
		}
	}
	writeError(w, http.StatusNotFound, "tenant "+quoteName(name)+" is not configured (tenants[].name)")
}

// ResumeTenant lifts a tenant's pause (POST /api/v1/tenants/{name}/resume).
func (c *Client) ResumeTenant(ctx context.Context, name string) error {
	var out map[string]string
	return c.do(ctx, http.MethodPost, "/api/v1/tenants/"+url.PathEscape(name)+"/resume", &out)
}

func quoteName(s string) string { return `"` + url.PathEscape(s) + `"` }

// Tenants lists the configured tenants (GET /api/v1/tenants).
func (c *Client) Tenants(ctx context.Context) ([]Tenant, error) {
	var p TenantPage
	err := c.do(ctx, http.MethodGet, "/api/v1/tenants", &p)
	return p.Tenants, err
}

// Tenant shows one tenant (GET /api/v1/tenants/{name}).
func (c *Client) Tenant(ctx context.Context, name string) (Tenant, error) {
	var t Tenant
	err := c.do(ctx, http.MethodGet, "/api/v1/tenants/"+url.PathEscape(name), &t)
	return t, err
}
