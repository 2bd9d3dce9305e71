package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/delivery"
	"github.com/relayq/relayq/delivery/egress"
	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/internal/logbuf"
	"github.com/relayq/relayq/internal/suppression"
	"github.com/relayq/relayq/internal/tenant"
	"github.com/relayq/relayq/queue"
	"github.com/relayq/relayq/submission"
)

// serve is `relayq serve`: load, open, listen, run until a signal.
func serve(args []string, out io.Writer) error {
	path, err := configFlag("serve", args, out, nil)
	if err != nil {
		return err
	}
	cfg, running, err := config.LoadSettings(path)
	if err != nil {
		return err
	}
	logOut := logbuf.New(os.Stderr, 50*time.Millisecond, 64<<10)
	defer logOut.Flush()
	log := newLogger(cfg.Log, logOut)
	slog.SetDefault(log)
	logWarnings(log, cfg)
	// Take the signals before anything can announce readiness: a SIGTERM
	// that systemd (or anyone) sends right after READY=1 must shut down
	// gracefully, not kill the process with its default action.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	a := &app{conf: appConfig{path: path, cfg: cfg, running: running}, log: log, metrics: newMetrics(), sigs: sigs}
	for _, s := range cfg.Streams {
		a.metrics.m.Streams([]string{s.Name})
	}
	for _, s := range cfg.Delivery.Egress.Sources {
		a.metrics.m.Sources([]string{s.Name})
	}
	defer a.close() // on the way out of a failed start; run closes it itself
	if err := a.open(); err != nil {
		return err
	}
	if err := a.listen(); err != nil {
		return err
	}
	return a.run(sigs)
}

func cfgName(path string) string {
	if path == "" {
		return "embedded defaults"
	}
	return path
}

// loadTLS loads the pair of section (submission.tls, admin.tls): nil
// when none is configured.
func loadTLS(section string, f config.TLSFiles) (*tls.Config, error) {
	if !f.Enabled() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", section, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

func submissionPolicy(cfg *config.Config) submission.Policy {
	p := submission.Policy{Trusted: cfg.Submission.TrustedNetworks, APIKeys: apiKeys(cfg), DefaultStream: cfg.Submission.DefaultStream}
	for _, u := range cfg.Submission.Users {
		p.Users = append(p.Users, submission.User{Username: u.Username, PasswordHash: u.PasswordHash, Stream: u.Stream})
	}
	for _, s := range cfg.Streams {
		p.Streams = append(p.Streams, s.Name)
	}
	if len(cfg.Tenants) > 0 {
		p.Tenants = tenant.New(cfg.Tenants)
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
		IdempotencyWindow: s.IdempotencyWindow,
		MaxHold:           s.MaxHold,
		Logger:            log,
		BeforeCommit:      eng.ClaimFirst,
		OnQueued:          eng.Enqueue,
		Observer:          m.submission(),
		Proxy:             proxyWrap(s.ProxyProtocol.Trusted, "submission.proxy_protocol.trusted", log),
	}
}

// engineSettings are the delivery settings of cfg; tp is the TLS policy
// of MX delivery, made once at start.
func engineSettings(cfg *config.Config, tp route.TLSPolicy) delivery.Settings {
	d := cfg.Delivery
	sh := smtpclient.Smarthost{
		Address: d.Smarthost.Address, Fallback: d.Smarthost.Fallback,
		Username: d.Smarthost.Username, Password: d.Smarthost.Password,
		TLS: smtpclient.SmarthostTLS(d.Smarthost.TLS), AllowInsecureAuth: d.Smarthost.AllowInsecureAuth,
	}
	router := route.NewRouter(route.Options{Routes: d.Routes, Smarthost: sh, DNSServer: d.DNSServer, TLSPolicy: tp})
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
		Suppress:  (&suppression.List{Config: suppressionConfig(cfg)}).Auto,
		Streams:   streams(cfg),
		Egress:    egressOf(cfg),
	}
}

// egressOf is the egress of cfg (nil: none). Load has checked it, so an
// error here is a bug; mail then goes from no particular address.
func egressOf(cfg *config.Config) *egress.Resolver {
	r, err := egress.New(cfg.Delivery.Egress)
	if err != nil {
		slog.Error("delivery.egress was checked at load but does not build; sending from no particular address", "err", err)
		return nil
	}
	return r
}

// streams are the configured streams for delivery and shaping, the
// default first: mail of a stream no longer configured counts as it.
func streams(cfg *config.Config) []shaping.Stream {
	out := []shaping.Stream{}
	for _, s := range cfg.Streams {
		if s.Name == cfg.Submission.DefaultStream {
			out = append([]shaping.Stream{{Name: s.Name, Weight: s.Weight}}, out...)
		} else {
			out = append(out, shaping.Stream{Name: s.Name, Weight: s.Weight})
		}
	}
	return out
}

func engineOptions(cfg *config.Config, store *queue.Store, log *slog.Logger, m *metrics, tp route.TLSPolicy) delivery.Options {
	s := engineSettings(cfg, tp)
	return delivery.Options{
		Store: store, Router: s.Router, Courier: s.Courier, Policy: s.Policy, WarnAfter: s.WarnAfter, Suppress: s.Suppress, Streams: s.Streams, Egress: s.Egress,
		Hostname: cfg.Hostname, Workers: cfg.Delivery.Workers, MaxConnsPerDest: cfg.Delivery.MaxConnsPerDomain,
		Logger: log, Observer: m.delivery(), TLSReport: store.TLS(),
	}
}
