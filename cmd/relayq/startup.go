package main

// What serve says about its configuration: warnings at start, one summary
// line of what it listens on and where mail goes, and on SIGHUP which
// changed keys wait for a restart.

import (
	"log/slog"
	"net"
	"sort"
	"strings"

	"github.com/relayq/relayq/config"
)

// logWarnings logs config.Warnings, one line each.
func logWarnings(log *slog.Logger, cfg *config.Config) {
	for _, w := range config.Warnings(cfg) {
		log.Warn("config: "+w.Message, "key", w.Key)
	}
}

// logSummary logs, in one line, what an operator checks first: listeners,
// who may relay, TLS, and where mail goes.
func logSummary(log *slog.Logger, cfg *config.Config, smtp, smtps []net.Addr) {
	s := cfg.Submission
	trusted := make([]string, len(s.TrustedNetworks))
	for i, p := range s.TrustedNetworks {
		trusted[i] = p.String()
	}
	tls := "off"
	if s.TLS.Enabled() {
		tls = "on (STARTTLS"
		if len(smtps) > 0 {
			tls += ", implicit"
		}
		tls += ")"
	}
	log.Info("relayq listening",
		"smtp", addrList(smtp), "smtps", addrList(smtps), "tls", tls,
		"trusted", strings.Join(trusted, ","), "auth_users", len(s.Users),
		"admin", cfg.Admin.Listen,
		"next_hop", nextHop(cfg.Delivery), "delivery_tls", cfg.Delivery.TLS)
}

func addrList(as []net.Addr) string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return strings.Join(out, ",")
}

// nextHop says where mail goes: routes, then smarthost or MX.
func nextHop(d config.Delivery) string {
	var parts []string
	doms := make([]string, 0, len(d.Routes))
	for dom := range d.Routes {
		doms = append(doms, dom)
	}
	sort.Strings(doms)
	for _, dom := range doms {
		parts = append(parts, dom+"="+d.Routes[dom])
	}
	switch {
	case d.Smarthost.Address != "":
		parts = append(parts, "smarthost "+d.Smarthost.Address+" ("+d.Smarthost.TLS+")")
	case d.Routes["*"] == "":
		parts = append(parts, "MX")
	}
	return strings.Join(parts, " ")
}
