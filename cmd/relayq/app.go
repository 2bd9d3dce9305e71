package main

// The running relay: serve builds an app in steps (open, listen), runs it
// until a signal, reloads it on SIGHUP and shuts it down within one
// deadline.

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/internal/buildinfo"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/deliverability"
	"github.com/relayq/relayq/internal/dkim"
	"github.com/relayq/relayq/internal/drain"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/internal/preflight"
	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/internal/tenant"
	"github.com/relayq/relayq/internal/unsubscribe"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/returnpath/verp"
	"github.com/relayq/relayq/submission"
)

// app is the relay serve runs: its configuration and every component a
// reload or the shutdown reaches.
type app struct {
	conf    appConfig
	log     *slog.Logger
	store   *queue.Store
	metrics *metrics
	out     outbound
	in      inbound
	// acct is the accountability check, made by account once the store is
	// open.
	acct *accountWatch
	// closers run last to first when the app ends, however far open and
	// listen got; the store closes after them.
	closers []func()
	// sigs are the signals serve takes (a wait for the queue's lease ends
	// on one).
	sigs chan os.Signal
	// own is the lease of the node's queue; nil without a cluster.
	own *ownLease
	// adopted are the lost nodes' queues this node delivers.
	adopted adoptedQueues
}

// appConfig is the configuration in force and where it came from.
type appConfig struct {
	path    string           // the file; "" for the embedded defaults
	cfg     *config.Config   // as loaded at start (restart-only keys)
	running []config.Setting // what reload compares a new file with
}

// outbound is the delivery side.
type outbound struct {
	eng    *delivery.Engine
	shaper *shaping.Shaper
	state  shaping.State // the limiter state: in process or shared (cluster)
	signer *dkim.Signer
	supp   *suppression.List
	// tls is the TLS policy of MX delivery (DANE, MTA-STS), made once with
	// the store as its cache; every Router a reload builds gets it, so
	// delivery.mta_sts, delivery.mta_sts_root_ca_file and delivery.dane
	// need a restart.
	tls route.TLSPolicy
	// verp signs the envelope senders on bounces.domain; nil when it is
	// "" (a restart-only key).
	verp *verp.Signer
	// preflight are the streams' checks at acceptance; nil when no stream
	// has any (streams[] needs a restart; the key domains follow dkim).
	preflight *preflight.Checker
	// unsub signs the one-click links; nil without unsubscribe.listen.
	unsub *unsubscribe.Signer
	// quota counts the tenants' messages (tenants.go).
	quota *tenant.Counter
	// reputation judges the tenants' rates (reputation.go).
	reputation *reputationWatch
}

// inbound is what takes mail and commands.
type inbound struct {
	srv         *submission.Server
	bounces     *submission.Server // the bounce domain's listener; nil without bounces.listen
	stopHTTP    func(context.Context)
	admin       *http.Server // nil without admin.listen
	drainer     *drain.Drainer
	smtp, smtps []net.Addr
}

// onClose adds f to what close runs.
func (a *app) onClose(f func()) { a.closers = append(a.closers, f) }

// close runs the closers, last first, then closes the store; a second
// call does nothing.
func (a *app) close() error {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
	if a.store == nil {
		return nil
	}
	err := a.store.Close()
	a.store = nil
	return err
}

// open opens the queue and builds the delivery side.
func (a *app) open() error {
	cfg := a.conf.cfg
	store, err := a.openQueue()
	if err != nil {
		return err
	}
	a.store = store
	a.metrics.watchQueue(store)
	dc, err := dkimConfig(cfg)
	if err != nil {
		return err
	}
	a.out.signer = dkim.NewSigner(dc)
	if a.out.tls, err = newTLSPolicy(cfg, store, a.log); err != nil {
		return err
	}
	a.onClose(func() { closeTLSPolicy(a.out.tls) })
	// Closed after the engine stopped, the last user of it.
	state, closeState, err := shapingState(cfg, a.log, a.metrics)
	if err != nil {
		return err
	}
	a.out.state = state
	a.onClose(closeState)
	if a.out.shaper, err = newShaper(cfg, state, a.log, a.metrics); err != nil {
		return err
	}
	if a.out.verp, err = bounceSigner(cfg, store); err != nil {
		return err
	}
	eo := engineOptions(cfg, store, a.log, a.metrics, a.out.tls)
	eo.ReturnPath = a.out.returnPath()
	eo.Sign = a.out.signer.Sign
	eo.Shaper = a.out.shaper
	if a.out.eng, err = delivery.New(eo); err != nil {
		return err
	}
	supStore, closeSup := suppressionStore(state, store)
	a.onClose(closeSup) // before the state (its Redis client) and the store
	a.out.supp = &suppression.List{Store: supStore, Config: suppressionConfig(cfg)}
	supp := a.out.supp
	store.Suppressions().SetScoper(func(s identity.Sender) string { return string(supp.ScopeOf(s)) })
	return nil
}

// listen builds the submission server and opens every listener.
func (a *app) listen() error {
	cfg := a.conf.cfg
	tlsConf, err := loadTLS("submission.tls", cfg.Submission.TLS)
	if err != nil {
		return err
	}
	so := submissionOptions(cfg, a.store, tlsConf, a.log, a.out.eng, a.metrics)
	so.Signer = messageSigner(a.out.signer)
	so.Suppressions = a.out.supp
	if a.out.unsub, err = unsubscribeSigner(cfg); err != nil {
		return err
	}
	var links preflight.Linker
	if a.out.unsub != nil {
		links = a.out.unsub
	}
	if a.out.preflight = newPreflight(cfg, links); a.out.preflight != nil {
		so.Preflight = a.out.preflight
	}
	if a.out.quota, err = loadQuota(a.store, cfg); err != nil {
		return err
	}
	so.Quotas = a.out.quota
	q := a.out.quota
	a.out.reputation = &reputationWatch{store: a.store, mon: tenant.NewMonitor(), dir: q.Directory, clock: clock.Real, log: a.log}
	so.Pauses = a.out.reputation.mon
	if a.metrics != nil {
		a.metrics.m.WatchTenants(q.Directory().Names(), a.out.reputation.metricsView)
	}
	srv, err := submission.New(so)
	if err != nil {
		return err
	}
	a.in.srv = srv
	if err := a.openListeners(); err != nil {
		srv.Close()
		return err
	}
	if err := a.listenUnsubscribe(); err != nil {
		return err
	}
	return a.listenBounces(tlsConf)
}

// openListeners opens SMTP, SMTPS, HTTP submission and the admin API.
func (a *app) openListeners() error {
	cfg, srv := a.conf.cfg, a.in.srv
	for _, addr := range cfg.Submission.Listen {
		la, err := srv.Listen(addr)
		if err != nil {
			return err
		}
		a.in.smtp = append(a.in.smtp, la)
	}
	for _, addr := range cfg.Submission.TLSListen {
		la, err := srv.ListenTLS(addr)
		if err != nil {
			return err
		}
		a.in.smtps = append(a.in.smtps, la)
	}
	var err error
	if a.in.stopHTTP, err = startHTTPSubmission(cfg, srv, a.log); err != nil {
		return err
	}
	a.in.drainer = newDrainer(cfg, a.store, a.out.eng, srv, a.log)
	if cfg.Admin.Listen == "" {
		return nil
	}
	a.in.admin, err = startAdmin(cfg.Admin, a.store, a.out.eng, shapingAPI{a.out.shaper, a.out.eng, a.out.state}, a.metrics, a.log, a.out.supp,
		tenantsAPI(a.out.quota, a.out.reputation), a.account(), srv.LimitListener, a.in.drainer)
	return err
}

// run delivers and serves until SIGINT or SIGTERM (reloading on SIGHUP),
// then shuts down. A second SIGINT or SIGTERM during the shutdown kills
// the process at once: sigs stops receiving with the first.
func (a *app) run(sigs chan os.Signal) error {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	engDone := make(chan struct{})
	go func() { a.out.eng.Run(ctx, a.conf.cfg.ShutdownTimeout); close(engDone) }()
	eventsDone := startEvents(ctx, a.conf.cfg, a.store, a.metrics, a.log)
	go followShared(ctx, a.out.state, a.out.shaper, a.out.eng, time.Second)
	adoptedDone := a.startAdopting(ctx)
	go deliverability.Follow(ctx, a.store.Events(), a.metrics.deliv, a.log)
	go a.out.reputation.run(ctx)
	go a.account().watch(ctx)
	a.logStarted()
	notifySystemd(a.log, daemon.SdNotifyReady)

	var lost <-chan struct{}
	if a.own != nil {
		lost = a.own.lost
	}
	var err error
wait:
	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				a.reload()
				continue
			}
			a.log.Info("shutting down", "signal", sig.String(), "timeout", a.conf.cfg.ShutdownTimeout)
			if sig == syscall.SIGTERM && a.conf.cfg.Cluster.DrainOnStop {
				a.drainOnStop()
			}
		case <-lost:
			err = errLeaseLost
			a.log.Error("shutting down: "+err.Error(), "queue", a.conf.cfg.Queue.Path)
		}
		break wait
	}
	notifySystemd(a.log, daemon.SdNotifyStopping)
	signal.Stop(sigs)
	stop() // the engine and the adopter: adopted queues close before what they use
	adoptedDone()
	if serr := a.shutdown(stop, engDone, eventsDone); err == nil {
		err = serr
	}
	return err
}

func (a *app) logStarted() {
	bi := buildinfo.Get()
	cfg := a.conf.cfg
	a.log.Info("relayq started", "version", bi.Version, "commit", bi.Commit, "go", bi.GoVersion, "hostname", cfg.Hostname, "queue", cfg.Queue.Path, "config", cfgName(a.conf.path))
	logSummary(a.log, cfg, a.in.smtp, a.in.smtps)
}

// shutdown stops taking mail and stops delivering, both within one
// deadline of shutdown_timeout, then closes the queue. The engine is
// stopped at the same moment as the listeners: its grace for attempts in
// flight is shutdown_timeout from its stop, so it ends with the same
// deadline, and the whole shutdown stays inside a supervisor's stop
// timeout (systemd TimeoutStopSec). Mail accepted meanwhile is on disk
// and goes at the next start.
func (a *app) shutdown(stopEngine func(), engDone <-chan struct{}, eventsDone func()) error {
	ctx, cancel := context.WithTimeout(context.Background(), a.conf.cfg.ShutdownTimeout)
	defer cancel()
	stopEngine()
	a.in.stopHTTP(ctx)
	if err := a.in.srv.Shutdown(ctx); err != nil {
		a.log.Warn("submission sessions cut at shutdown", "err", err)
	}
	if a.in.bounces != nil {
		if err := a.in.bounces.Shutdown(ctx); err != nil {
			a.log.Warn("bounce listener sessions cut at shutdown", "err", err)
		}
	}
	<-engDone
	eventsDone()
	if a.in.admin != nil {
		_ = a.in.admin.Shutdown(ctx)
	}
	if err := a.close(); err != nil {
		return fmt.Errorf("closing queue: %w", err)
	}
	a.log.Info("relayq stopped")
	return nil
}

// reload re-reads the config file on SIGHUP. A bad file is refused with a
// log line and the running configuration stays; a changed key that needs a
// restart is named in a warning (reloadcheck.go).
func (a *app) reload() {
	cfg, loaded, err := config.LoadSettings(a.conf.path)
	if err != nil {
		a.log.Error("reload refused, keeping the running configuration", "err", err)
		return
	}
	tlsConf, err := loadTLS("submission.tls", cfg.Submission.TLS)
	if err != nil {
		a.log.Error("reload refused, keeping the running configuration", "err", err)
		return
	}
	dc, err := dkimConfig(cfg)
	if err != nil {
		a.log.Error("reload refused, keeping the running configuration", "err", err)
		return
	}
	a.in.srv.SetPolicy(submissionPolicy(cfg))
	a.out.quota.SetDirectory(tenant.New(cfg.Tenants))
	a.in.srv.SetTLS(tlsConf)
	a.out.signer.Update(dc)
	if a.out.preflight != nil {
		a.out.preflight.SetKeyDomains(keyDomains(cfg))
	}
	if err := reloadShaping(a.out.shaper, cfg, a.metrics); err != nil {
		a.log.Error("reload: shaping policy refused, keeping the running one", "err", err)
	}
	a.out.supp.SetConfig(suppressionConfig(cfg))
	es := engineSettings(cfg, a.out.tls)
	es.ReturnPath = a.out.returnPath() // bounces.domain needs a restart
	a.out.eng.Update(es)               // after the new policy: targets are resolved again
	applied, restart, now := reloadDiff(a.conf.running, loaded)
	logWarnings(a.log, cfg)
	logReload(a.log, cfgName(a.conf.path), applied, restart)
	a.conf.running = now
}
