package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/internal/clock"
	"github.com/relayq/relayq/internal/identity"
	"github.com/relayq/relayq/internal/preflight"
	"github.com/relayq/relayq/internal/unsubscribe"
)

// newPreflight builds the streams' preflight checks, nil when no stream
// has any (the Acceptor then skips the hook). DMARC records are looked up
// through delivery.dns_server, as MX records are.
func newPreflight(cfg *config.Config, links preflight.Linker) *preflight.Checker {
	streams := map[string]preflight.Checks{}
	for _, s := range cfg.Streams {
		var ch preflight.Checks
		// config validated the modes; an error here cannot happen.
		ch.DKIMAlignment, _ = preflight.ParseMode(s.Preflight.DKIMAlignment)
		ch.DMARC, _ = preflight.ParseMode(s.Preflight.DMARC)
		ch.OneClick, _ = preflight.ParseMode(s.Preflight.OneClick)
		if ch != (preflight.Checks{}) {
			streams[s.Name] = ch
		}
	}
	if len(streams) == 0 {
		return nil
	}
	return preflight.New(preflight.Options{
		Streams:      streams,
		KeyDomains:   keyDomains(cfg),
		BounceDomain: cfg.Bounces.Domain,
		DNS:          route.NewRouter(route.Options{DNSServer: cfg.Delivery.DNSServer}),
		Links:        links,
		Clock:        clock.Real,
	})
}

func keyDomains(cfg *config.Config) []string {
	var out []string
	for _, k := range cfg.DKIM.Keys {
		out = append(out, k.Domain)
	}
	return out
}

// unsubscribeSigner makes the one-click link signer, nil without
// unsubscribe.listen.
func unsubscribeSigner(cfg *config.Config) (*unsubscribe.Signer, error) {
	u := cfg.Unsubscribe
	if len(u.Listen) == 0 {
		return nil, nil
	}
	raw, err := os.ReadFile(u.SecretFile)
	if err != nil {
		return nil, fmt.Errorf("unsubscribe.secret_file: %w", err)
	}
	s, err := unsubscribe.New(u.URL, []byte(strings.TrimSpace(string(raw))))
	if err != nil {
		return nil, fmt.Errorf("unsubscribe: %w", err)
	}
	return s, nil
}

// listenUnsubscribe serves the one-click links on unsubscribe.listen.
func (a *app) listenUnsubscribe() error {
	cfg := a.conf.cfg
	if a.out.unsub == nil {
		return nil
	}
	h := unsubscribe.Handler{Signer: a.out.unsub, Suppressor: unsubscribe.StoreSuppressor{Store: a.store, Scope: func(s identity.Sender) string { return string(a.out.supp.ScopeOf(s)) }},
		Log: a.log.With("listener", "unsubscribe")}
	for _, addr := range cfg.Unsubscribe.Listen {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("unsubscribe.listen: %w", err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10,
			ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelWarn)}
		go func() { _ = srv.Serve(a.in.srv.LimitListener(l)) }()
		a.onClose(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
		})
		a.log.Info("unsubscribe listener", "addr", l.Addr().String())
	}
	return nil
}
