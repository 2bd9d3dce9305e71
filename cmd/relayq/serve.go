package main

import (
	"context"
	"crypto/tls"
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
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/buildinfo"
	"github.com/relayq/relayq/internal/dkim"
	"github.com/relayq/relayq/internal/logbuf"
	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// logOut batches log lines to standard error (see logbuf); serve flushes
// it on the way out.
var logOut = logbuf.New(os.Stderr, 50*time.Millisecond, 64<<10)

func newLogger(c config.Log) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	o := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(logOut, o))
	}
	return slog.New(slog.NewTextHandler(logOut, o))
}

func serve(args []string) error {
	path, err := configFlag("serve", args, os.Stdout, nil)
	if err != nil {
		return err
	}
	cfg, running, err := config.LoadSettings(path)
	if err != nil {
		return err
	}
	log := newLogger(cfg.Log)
	slog.SetDefault(log)
	defer logOut.Flush()
	logWarnings(log, cfg)
	// Take the signals before anything can announce readiness: a SIGTERM
	// that systemd (or anyone) sends right after READY=1 must shut down
	// gracefully, not kill the process with its default action.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	metrics := newMetrics()
	store, err := queue.Open(cfg.Queue.Path, queue.Options{Logger: log})
	if err != nil {
		return err
	}
	defer store.Close()
	metrics.watchQueue(store)

	dc, err := dkimConfig(cfg)
	if err != nil {
		return err
	}
	signer := dkim.NewSigner(dc)
	if verifiedTLS, err = newTLSPolicy(cfg, store, log); err != nil {
		return err
	}
	// The limiter state of traffic shaping: in this process, or shared
	// with the other nodes through Redis (cluster.redis_url). Closed after
	// the engine stopped, the last user of it.
	state, closeState, err := shapingState(cfg, log, metrics)
	if err != nil {
		return err
	}
	defer closeState()
	shaper, err := newShaper(cfg, state, log, metrics)
	if err != nil {
		return err
	}
	eo := engineOptions(cfg, store, log, metrics)
	eo.Sign = signer.Sign
	eo.Shaper = shaper
	eng, err := delivery.New(eo)
	if err != nil {
		return err
	}
	tlsConf, err := loadTLS(cfg.Submission.TLS)
	if err != nil {
		return err
	}
	so := submissionOptions(cfg, store, tlsConf, log, eng, metrics)
	so.Signer = messageSigner(signer)
	supStore, closeSup := suppressionStore(state, store)
	defer closeSup() // before the state (its Redis client) and the store
	suppressions := &suppression.List{Store: supStore, Config: suppressionConfig(cfg.Suppression)}
	so.Suppressions = suppressions
	srv, err := submission.New(so)
	if err != nil {
		return err
	}
	var smtpAddrs, smtpsAddrs []net.Addr
	for _, a := range cfg.Submission.Listen {
		la, err := srv.Listen(a)
		if err != nil {
			srv.Close()
			return err
		}
		smtpAddrs = append(smtpAddrs, la)
	}
	for _, a := range cfg.Submission.TLSListen {
		la, err := srv.ListenTLS(a)
		if err != nil {
			srv.Close()
			return err
		}
		smtpsAddrs = append(smtpsAddrs, la)
	}
	stopHTTP, err := startHTTPSubmission(cfg, srv, log)
	if err != nil {
		srv.Close()
		return err
	}
	var admin *http.Server
	if cfg.Admin.Listen != "" {
		admin, err = startAdmin(cfg.Admin, store, eng, shapingAPI{shaper, eng}, metrics, log, suppressions, newDrainer(cfg, store, eng, srv, log))
		if err != nil {
			srv.Close()
			return err
		}
	}

	ctx, stop := context.WithCancel(context.Background())
	engDone := make(chan struct{})
	go func() { eng.Run(ctx, cfg.ShutdownTimeout); close(engDone) }()
	eventsDone := startEvents(ctx, cfg, store, metrics, log)
	go followShared(ctx, state, shaper, eng, time.Second)
	bi := buildinfo.Get()
	log.Info("relayq started", "version", bi.Version, "commit", bi.Commit, "go", bi.GoVersion, "hostname", cfg.Hostname, "queue", cfg.Queue.Path, "config", cfgName(path))
	logSummary(log, cfg, smtpAddrs, smtpsAddrs)
	notifySystemd(log, daemon.SdNotifyReady)

	for sig := range sigs {
		if sig == syscall.SIGHUP {
			running = reload(path, running, srv, eng, shaper, signer, suppressions, metrics, log)
			continue
		}
		log.Info("shutting down", "signal", sig.String(), "timeout", cfg.ShutdownTimeout)
		notifySystemd(log, daemon.SdNotifyStopping)
		break
	}
	signal.Stop(sigs)
	// Stop taking mail first, then stop delivering, then close the queue.
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	stopHTTP(sctx)
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("submission sessions cut at shutdown", "err", err)
	}
	stop()
	<-engDone
	eventsDone()
	if admin != nil {
		_ = admin.Shutdown(sctx)
	}
	closeTLSPolicy()
	if err := store.Close(); err != nil {
		return fmt.Errorf("closing queue: %w", err)
	}
	log.Info("relayq stopped")
	return nil
}

func cfgName(path string) string {
	if path == "" {
		return "embedded defaults"
	}
	return path
}

// reload re-reads the config file on SIGHUP and returns the settings now
// running. A bad file is refused with a log line and the running
// configuration stays; a changed key that needs a restart is named in a
// warning (reloadcheck.go).
func reload(path string, running []config.Setting, srv *submission.Server, eng *delivery.Engine, shaper *shaping.Shaper, signer *dkim.Signer, sl *suppression.List, m *metrics, log *slog.Logger) []config.Setting {
	cfg, loaded, err := config.LoadSettings(path)
	if err != nil {
		log.Error("reload refused, keeping the running configuration", "err", err)
		return running
	}
	tlsConf, err := loadTLS(cfg.Submission.TLS)
	if err != nil {
		log.Error("reload refused, keeping the running configuration", "err", err)
		return running
	}
	dc, err := dkimConfig(cfg)
	if err != nil {
		log.Error("reload refused, keeping the running configuration", "err", err)
		return running
	}
	srv.SetPolicy(submissionPolicy(cfg))
	srv.SetTLS(tlsConf)
	signer.Update(dc)
	if err := reloadShaping(shaper, cfg, m); err != nil {
		log.Error("reload: shaping policy refused, keeping the running one", "err", err)
	}
	sl.SetConfig(suppressionConfig(cfg.Suppression))
	eng.Update(engineSettings(cfg)) // after the new policy: targets are resolved again
	applied, restart, now := reloadDiff(running, loaded)
	logWarnings(log, cfg)
	logReload(log, cfgName(path), applied, restart)
	return now
}

func loadTLS(f config.TLSFiles) (*tls.Config, error) {
	if !f.Enabled() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("submission.tls: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

func submissionPolicy(cfg *config.Config) submission.Policy {
	p := submission.Policy{Trusted: cfg.Submission.TrustedNetworks, APIKeys: apiKeys(cfg)}
	for _, u := range cfg.Submission.Users {
		p.Users = append(p.Users, submission.User{Username: u.Username, PasswordHash: u.PasswordHash})
	}
	return p
}

func submissionOptions(cfg *config.Config, store *queue.Store, tlsConf *tls.Config, log *slog.Logger, eng *delivery.Engine, m *metrics) submission.Options {
	s := cfg.Submission
	return submission.Options{
		Hostname:          cfg.Hostname,
		Queue:             store,
		Policy:            submissionPolicy(cfg),
		TLS:               tlsConf,
		AllowInsecureAuth: s.AllowInsecureAuth,
		MaxMessageBytes:   s.MaxMessageBytes,
		MaxRecipients:     s.MaxRecipients,
		MaxConnections:    s.MaxConnections,
		MaxConnsPerIP:     s.MaxConnectionsPerIP,
		ReadTimeout:       s.ReadTimeout,
		DataTimeout:       s.DataTimeout,
		SessionTimeout:    s.SessionTimeout,
		AuthMaxFailures:   s.AuthMaxFailures,
		AuthLockout:       s.AuthLockout,
		AddMissingHeaders: s.AddMissingHeaders,
		Logger:            log,
		BeforeCommit:      eng.ClaimFirst,
		OnQueued:          eng.Enqueue,
		Observer:          m.submission(),
	}
}

func engineSettings(cfg *config.Config) delivery.Settings {
	d := cfg.Delivery
	sh := smtpclient.Smarthost{
		Address: d.Smarthost.Address, Fallback: d.Smarthost.Fallback,
		Username: d.Smarthost.Username, Password: d.Smarthost.Password,
		TLS: smtpclient.SmarthostTLS(d.Smarthost.TLS), AllowInsecureAuth: d.Smarthost.AllowInsecureAuth,
	}
	router := route.NewRouter(route.Options{Routes: d.Routes, Smarthost: sh, DNSServer: d.DNSServer, TLSPolicy: verifiedTLS})
	dialer := &smtpclient.Dialer{
		Hostname:        cfg.Hostname,
		TLS:             smtpclient.TLSMode(d.TLS),
		ConnectTimeout:  d.ConnectTimeout,
		CommandTimeout:  d.CommandTimeout,
		GreetingTimeout: d.GreetingTimeout,
		Resolver:        router.Resolver(),
	}
	if sh.Address != "" {
		dialer.Smarthost = &sh
	}
	r := cfg.Retry
	return delivery.Settings{
		Router:  router,
		Courier: dialer,
		Policy: queue.Policy{
			Backoff:     queue.Backoff{Initial: r.InitialDelay, Multiplier: r.Multiplier, Jitter: r.Jitter, Max: r.MaxDelay},
			MaxAttempts: r.MaxAttempts,
			MaxAge:      r.MaxAge,
		},
		WarnAfter: r.WarnAfter,
		Suppress:  (&suppression.List{Config: suppressionConfig(cfg.Suppression)}).Auto,
	}
}

func engineOptions(cfg *config.Config, store *queue.Store, log *slog.Logger, m *metrics) delivery.Options {
	s := engineSettings(cfg)
	return delivery.Options{
		Store: store, Router: s.Router, Courier: s.Courier, Policy: s.Policy, WarnAfter: s.WarnAfter, Suppress: s.Suppress,
		Hostname: cfg.Hostname, Workers: cfg.Delivery.Workers, MaxConnsPerDest: cfg.Delivery.MaxConnsPerDomain,
		Logger: log, Observer: m.delivery(), TLSReport: store,
	}
}
