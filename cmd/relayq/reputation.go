package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/relayq/relayq/internal/clock"
	relaymetrics "github.com/relayq/relayq/internal/metrics"
	"github.com/relayq/relayq/internal/tenant"
	"github.com/relayq/relayq/queue"
)

// reputationWatch feeds each tenant's outcomes from the event stream to
// the reputation monitor and judges the tenants after every batch of new
// events: a tenant past its pause threshold is paused at the first batch
// that carries it there (the evaluation period is one batch, at most
// reputationBatch events or what one commit added). At start it reads
// every event kept (events.retention, a week by default, longer than any
// usual window), so a restart judges on the same history. A change of
// state is logged and recorded as a tenant_state event (webhooks, a
// tenant's own webhook included, carry it).
type reputationWatch struct {
	store  *queue.Store
	mon    *tenant.Monitor
	dir    func() *tenant.Directory
	clock  clock.Clock
	log    *slog.Logger
	cursor string
}

const reputationBatch = 1000

// step reads the events after the cursor, counts them, and judges every
// configured tenant; it reports whether it read a full batch (more may
// wait).
func (w *reputationWatch) step() (more bool, err error) {
	evs, last, err := w.store.Events().List(queue.EventQuery{After: w.cursor, Limit: reputationBatch})
	if err != nil {
		return false, err
	}
	w.cursor = last
	d := w.dir()
	for _, ev := range evs {
		if _, ok := d.Get(ev.Tenant); !ok || ev.Tenant == "" {
			continue
		}
		switch {
		case ev.Type == queue.EventDelivered && !ev.Async:
			w.mon.Observe(ev.Tenant, tenant.Delivered, ev.Time)
		case ev.Type == queue.EventBounced && ev.Async:
			w.mon.Observe(ev.Tenant, tenant.LateBounced, ev.Time)
		case ev.Type == queue.EventBounced && ev.By == "":
			w.mon.Observe(ev.Tenant, tenant.Bounced, ev.Time)
		case ev.Type == queue.EventComplained:
			w.mon.Observe(ev.Tenant, tenant.Complained, ev.Time)
		}
	}
	return len(evs) == reputationBatch, w.judge(d)
}

// judge evaluates every configured tenant and records each change.
func (w *reputationWatch) judge(d *tenant.Directory) error {
	now := w.clock.Now()
	for _, name := range d.Names() {
		t, _ := d.Get(name)
		s, changed := w.mon.Evaluate(name, t.Reputation, now)
		if !changed {
			continue
		}
		if err := w.record(name, s); err != nil {
			return err
		}
	}
	return nil
}

// record logs a tenant's new state and stores its tenant_state event.
func (w *reputationWatch) record(name string, s tenant.State) error {
	text := s.Level.String()
	if s.Reason != "" {
		text += ": " + s.Reason
	}
	w.log.Warn("tenant reputation", "tenant", name, "state", s.Level.String(), "reason", s.Reason)
	return w.store.Events().Add(queue.Event{Type: queue.EventTenantState, Tenant: name, Reply: text, Time: w.clock.Now()})
}

// resume lifts a tenant's pause (an operator's) and records it.
func (w *reputationWatch) resume(name string) bool {
	if !w.mon.Resume(name, w.clock.Now()) {
		return false
	}
	if err := w.record(name, w.mon.State(name)); err != nil {
		w.log.Error("recording a tenant's resume failed", "tenant", name, "err", err)
	}
	return true
}

// run follows the event stream until ctx ends; it judges again every
// minute without events, so a cool-down ends on time.
func (w *reputationWatch) run(ctx context.Context) {
	for ctx.Err() == nil {
		changed := w.store.Events().Changed()
		more, err := w.step()
		if err != nil {
			w.log.Error("tenant reputation: reading events failed", "err", err)
		}
		if more {
			continue
		}
		t := w.clock.NewTimer(time.Minute)
		select {
		case <-changed:
		case <-t.C():
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// resumeFunc is the admin API's resume of tenant name; nil without a
// watch.
func (w *reputationWatch) resumeFunc(name string) func() bool {
	if w == nil {
		return nil
	}
	return func() bool { return w.resume(name) }
}

// metricsView is tenant name's reputation for the metrics.
func (w *reputationWatch) metricsView(name string) relaymetrics.TenantView {
	t, _ := w.dir().Get(name)
	sent, bounced, complained := w.mon.Rates(name, t.Reputation.Window, w.clock.Now())
	v := relaymetrics.TenantView{Level: int(w.mon.State(name).Level)}
	if sent > 0 {
		v.BounceRate, v.ComplaintRate = float64(bounced)/float64(sent), float64(complained)/float64(sent)
	}
	return v
}
