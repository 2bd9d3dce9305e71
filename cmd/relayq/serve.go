package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/logbuf"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

func configFlag(name string, args []string) (string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	path := fs.String("config", "", "YAML config file (default: embedded defaults)")
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	return *path, nil
}

func checkConfig(args []string) error {
	path, err := configFlag("check-config", args)
	if err != nil {
		return err
	}
	if _, err := config.Load(path); err != nil {
		return err
	}
	where := path
	if where == "" {
		where = "embedded defaults"
	}
	fmt.Printf("%s: ok\n", where)
	return nil
}

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
	path, err := configFlag("serve", args)
	if err != nil {
		return err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	log := newLogger(cfg.Log)
	slog.SetDefault(log)
	defer logOut.Flush()

	metrics := newMetrics()
	store, err := queue.Open(cfg.Queue.Path, queue.Options{Logger: log})
	if err != nil {
		return err
	}
	defer store.Close()
	metrics.watchQueue(store)

	eng, err := delivery.New(engineOptions(cfg, store, log, metrics))
	if err != nil {
		return err
	}
	tlsConf, err := loadTLS(cfg.Submission.TLS)
	if err != nil {
		return err
	}
	srv, err := submission.New(submissionOptions(cfg, store, tlsConf, log, eng, metrics))
	if err != nil {
		return err
	}
	for _, a := range cfg.Submission.Listen {
		if _, err := srv.Listen(a); err != nil {
			srv.Close()
			return err
		}
	}
	for _, a := range cfg.Submission.TLSListen {
		if _, err := srv.ListenTLS(a); err != nil {
			srv.Close()
			return err
		}
	}
	stopHTTP, err := startHTTPSubmission(cfg, srv, log)
	if err != nil {
		srv.Close()
		return err
	}
	var admin *http.Server
	if cfg.Admin.Listen != "" {
		admin, err = startAdmin(cfg.Admin, store, eng, metrics, log)
		if err != nil {
			srv.Close()
			return err
		}
	}

	ctx, stop := context.WithCancel(context.Background())
	engDone := make(chan error, 1)
	go func() { engDone <- eng.Run(ctx, cfg.ShutdownTimeout) }()
	log.Info("relayq started", "version", version, "hostname", cfg.Hostname, "queue", cfg.Queue.Path, "config", cfgName(path))

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	for sig := range sigs {
		if sig == syscall.SIGHUP {
			reload(path, srv, eng, log)
			continue
		}
		log.Info("shutting down", "signal", sig.String(), "timeout", cfg.ShutdownTimeout)
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
	if admin != nil {
		_ = admin.Shutdown(sctx)
	}
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

// reload re-reads the config file on SIGHUP. A bad file is refused with a
// log line and the running configuration stays.
func reload(path string, srv *submission.Server, eng *delivery.Engine, log *slog.Logger) {
	cfg, err := config.Load(path)
	if err != nil {
		log.Error("reload refused, keeping the running configuration", "err", err)
		return
	}
	tlsConf, err := loadTLS(cfg.Submission.TLS)
	if err != nil {
		log.Error("reload refused, keeping the running configuration", "err", err)
		return
	}
	srv.SetPolicy(submissionPolicy(cfg))
	srv.SetTLS(tlsConf)
	eng.Update(engineSettings(cfg))
	log.Info("configuration reloaded", "config", cfgName(path))
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
		AuthMaxFailures:   s.AuthMaxFailures,
		AuthLockout:       s.AuthLockout,
		Logger:            log,
		BeforeCommit:      eng.ClaimFirst,
		OnQueued:          eng.Enqueue,
		Observer:          m.submission(),
	}
}

func engineSettings(cfg *config.Config) delivery.Settings {
	d := cfg.Delivery
	sh := delivery.Smarthost{
		Address: d.Smarthost.Address, Fallback: d.Smarthost.Fallback,
		Username: d.Smarthost.Username, Password: d.Smarthost.Password,
		TLS: d.Smarthost.TLS, AllowInsecureAuth: d.Smarthost.AllowInsecureAuth,
	}
	router := delivery.NewRouter(delivery.RouteConfig{Routes: d.Routes, Smarthost: sh, DNSServer: d.DNSServer})
	dialer := &delivery.Dialer{
		Hostname:       cfg.Hostname,
		TLS:            d.TLS,
		ConnectTimeout: d.ConnectTimeout,
		CommandTimeout: d.CommandTimeout,
		Resolver:       router.Resolver(),
	}
	if sh.Address != "" {
		dialer.Smarthost = &sh
	}
	r := cfg.Retry
	return delivery.Settings{
		Router: router,
		Dialer: dialer,
		Policy: queue.Policy{
			Backoff:     queue.Backoff{Initial: r.InitialDelay, Multiplier: r.Multiplier, Jitter: r.Jitter, Max: r.MaxDelay},
			MaxAttempts: r.MaxAttempts,
			MaxAge:      r.MaxAge,
		},
		WarnAfter: r.WarnAfter,
	}
}

func engineOptions(cfg *config.Config, store *queue.Store, log *slog.Logger, m *metrics) delivery.Options {
	s := engineSettings(cfg)
	return delivery.Options{
		Store: store, Router: s.Router, Dialer: s.Dialer, Policy: s.Policy, WarnAfter: s.WarnAfter,
		Hostname: cfg.Hostname, Workers: cfg.Delivery.Workers, MaxConnsPerDest: cfg.Delivery.MaxConnsPerDomain,
		Logger: log, Observer: m.delivery(),
	}
}
