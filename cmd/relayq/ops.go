package main

// Wiring of the operator side: Prometheus metrics and the admin API. The
// logic lives in the metrics and admin packages; this file only connects
// them to the queue and the delivery engine.

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/buildinfo"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/console"
	"github.com/relayq/relayq/internal/deliverability"
	relaymetrics "github.com/relayq/relayq/internal/metrics"
	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// metrics is the process's metrics registry and observers.
type metrics struct {
	m *relaymetrics.Metrics
	// deliv keeps each provider's acceptance figures from the event
	// stream (followed in app.run), for the metrics and the admin API.
	deliv *deliverability.Tracker
}

func newMetrics() *metrics {
	m := relaymetrics.New()
	bi := buildinfo.Get()
	m.SetBuildInfo(bi.Version, bi.GoVersion, bi.Commit)
	t := deliverability.NewTracker(clock.Real.Now)
	m.WatchDeliverability(t.Snapshot)
	return &metrics{m: m, deliv: t}
}

// watchQueue exports the store's in-memory stats at every scrape.
func (m *metrics) watchQueue(st *queue.Store) { m.m.WatchQueue(st.Stats) }

func (m *metrics) submission() submission.Observer { return m.m.Submission() }

func (m *metrics) delivery() delivery.Observer { return m.m.Delivery() }

// startAdmin listens on c.Listen now (so a busy or bad address fails the
// start) and serves the admin API, /metrics and the probes in the background.
//
// limit, if not nil, wraps a listener beyond loopback
// (submission.Server.LimitListener: admin connections count against the
// same connection limits as SMTP's). On loopback only local processes
// reach it, and the operator's way in must survive a local application
// that holds every SMTP connection its address may have.
//
// acct, when not nil, is the relay's accountability check, for
// POST /api/v1/queue/accountability and the console.
func startAdmin(c config.Admin, st *queue.Store, eng *delivery.Engine, sh admin.Shaping, m *metrics, log *slog.Logger, sl *suppression.List, tn admin.Tenants, acct *accountWatch, limit func(net.Listener) net.Listener, d ...admin.Drainer) (*http.Server, error) {
	o := admin.Options{
		Store:        st,
		Shaping:      sh,
		Suppressions: sl,
		Tenants:      tn,
		Token:        c.Token,
		ReadToken:    c.ReadToken,
		AllowedHosts: c.AllowedHosts,
		Ready:        admin.StoreReady(st),
		Logger:       log,
		// One guessing limit for the API's tokens and the console's login.
		Lockout: admin.NewTokenLimiter(clock.Real),
	}
	if acct != nil { // a nil *accountWatch in the interface would not compare nil
		o.Accountability = acct
	}
	if eng != nil { // a nil *Engine in the interface would not compare nil
		o.Kicker = eng
		o.Backoff = func(domain string) (time.Time, string, bool) {
			b, ok := eng.BackoffOf(domain)
			return b.Until, b.Cause, ok
		}
	}
	if m != nil {
		o.Metrics = m.m.Handler()
		o.Deliverability = m.deliv.Snapshot
	}
	if len(d) > 0 {
		o.Drainer = d[0]
		// A node out of service (a drain, drain_on_stop) takes no mail: a
		// load balancer must send none to it.
		ready, dr := o.Ready, d[0]
		o.Ready = func() error {
			if dr.Progress().Draining {
				return errors.New("draining: taking no mail")
			}
			return ready()
		}
	}
	tlsConf, err := loadTLS("admin.tls", c.TLS)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, fmt.Errorf("admin.listen %s: %w", c.Listen, err)
	}
	if c.Token == "" && !isLoopback(l.Addr()) {
		log.Warn("admin API listens beyond loopback without a token: anyone who can reach it can delete mail", "addr", l.Addr().String())
	}
	log.Info("admin API listening", "addr", l.Addr().String(), "token", c.Token != "", "tls", tlsConf != nil)
	o.Console = console.New(console.Options{Token: c.Token, ReadToken: c.ReadToken, Loopback: isLoopback(l.Addr()), Logger: log, Lockout: o.Lockout})
	if limit != nil && !isLoopback(l.Addr()) {
		l = limit(l)
	}
	return admin.Serve(l, admin.NewHandler(o), tlsConf, log), nil
}

// isLoopback reports whether a listener is reachable from this host only.
func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
