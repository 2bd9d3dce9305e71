package config

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// decode reads every key into a Config. Reading a key that defaults.yaml
// lacks, or not reading one it has, is reported as an internal error, so
// the documented example and the code cannot drift apart.
func (l *loader) decode() *Config {
	// Keys are read in the order of the fields below, which is the order
	// their errors are reported in.
	c := &Config{
		File:            l.file,
		Hostname:        strings.TrimSpace(l.str("hostname")),
		ShutdownTimeout: l.duration("shutdown_timeout"),
		Submission:      l.submission(),
		Queue:           Queue{Path: l.str("queue.path"), ReserveBytes: l.integer("queue.reserve_bytes")},
		Admin: Admin{
			Listen:       l.str("admin.listen"),
			Token:        l.str("admin.token"),
			ReadToken:    l.str("admin.read_token"),
			AllowedHosts: l.strList("admin.allowed_hosts"),
			TLS: TLSFiles{
				CertFile: l.str("admin.tls.cert_file"),
				KeyFile:  l.str("admin.tls.key_file"),
			},
		},
		Retry:       l.retry(),
		Delivery:    l.delivery(),
		Shaping:     l.shaping(),
		DKIM:        l.dkim(),
		Cluster:     l.cluster(),
		Events:      l.events(),
		Suppression: l.suppression(),
		Bounces:     l.bounces(),
		Streams:     l.streams(),
		Unsubscribe: l.unsubscribe(),
		Tenants:     l.tenants(),
		Log: Log{
			Format: strings.ToLower(l.str("log.format")),
			Level:  strings.ToLower(l.str("log.level")),
		},
	}
	l.checkAllRead()
	return c
}

// checkAllRead reports the keys of defaults.yaml that decode never read
// (unless loading already failed).
func (l *loader) checkAllRead() {
	if l.err != nil {
		return
	}
	var unread []string
	for k := range l.leaves {
		if !l.read[k] {
			unread = append(unread, dotted(k))
		}
	}
	if len(unread) > 0 {
		sort.Strings(unread)
		l.err = fmt.Errorf("config: internal error: keys in defaults.yaml never read: %s", strings.Join(unread, ", "))
	}
}

// submission reads the submission section.
func (l *loader) submission() Submission {
	return Submission{
		Listen:    l.strList("submission.listen"),
		TLSListen: l.strList("submission.tls_listen"),
		TLS: TLSFiles{
			CertFile: l.str("submission.tls.cert_file"),
			KeyFile:  l.str("submission.tls.key_file"),
		},
		TrustedNetworks:     l.prefixes("submission.trusted_networks"),
		Users:               l.users("submission.users"),
		HTTPListen:          l.str("submission.http_listen"),
		APIKeys:             l.apiKeys("submission.api_keys"),
		SESKeys:             l.sesKeys("submission.ses_keys"),
		AllowInsecureAuth:   l.boolean("submission.allow_insecure_auth"),
		MaxMessageBytes:     l.integer("submission.max_message_bytes"),
		MaxRecipients:       l.intKey("submission.max_recipients"),
		MaxConnections:      l.intKey("submission.max_connections"),
		MaxConnectionsPerIP: l.intKey("submission.max_connections_per_ip"),
		ReadTimeout:         l.duration("submission.read_timeout"),
		DataTimeout:         l.duration("submission.data_timeout"),
		SessionTimeout:      l.duration("submission.session_timeout"),
		AuthMaxFailures:     l.intKey("submission.auth_max_failures"),
		AuthLockout:         l.duration("submission.auth_lockout"),
		AddMissingHeaders:   l.boolean("submission.add_missing_headers"),
		IdempotencyWindow:   l.duration("submission.idempotency_window"),
		MaxHold:             l.duration("submission.max_hold"),
		DefaultStream:       strings.TrimSpace(l.str("submission.default_stream")),
		ProxyProtocol:       ProxyProtocol{Trusted: l.prefixes("submission.proxy_protocol.trusted")},
	}
}

// retry reads the retry section.
func (l *loader) retry() Retry {
	return Retry{
		InitialDelay: l.duration("retry.initial_delay"),
		Multiplier:   l.float("retry.multiplier"),
		Jitter:       l.duration("retry.jitter"),
		MaxDelay:     l.duration("retry.max_delay"),
		MaxAttempts:  l.intKey("retry.max_attempts"),
		MaxAge:       l.duration("retry.max_age"),
		WarnAfter:    l.duration("retry.warn_after"),
	}
}

// delivery reads the delivery section.
func (l *loader) delivery() Delivery {
	return Delivery{
		Workers:           l.intKey("delivery.workers"),
		MaxConnsPerDomain: l.intKey("delivery.max_conns_per_domain"),
		Routes:            l.routes("delivery.routes"),
		Smarthost: Smarthost{
			Address:           l.str("delivery.smarthost.address"),
			Fallback:          l.strList("delivery.smarthost.fallback"),
			Username:          l.str("delivery.smarthost.username"),
			Password:          l.str("delivery.smarthost.password"),
			TLS:               strings.ToLower(l.str("delivery.smarthost.tls")),
			AllowInsecureAuth: l.boolean("delivery.smarthost.allow_insecure_auth"),
		},
		DNSServer:       l.str("delivery.dns_server"),
		TLS:             strings.ToLower(l.str("delivery.tls")),
		ConnectTimeout:  l.duration("delivery.connect_timeout"),
		CommandTimeout:  l.duration("delivery.command_timeout"),
		GreetingTimeout: l.duration("delivery.greeting_timeout"),

		MTASTS:           mtaSTSMode(l.str("delivery.mta_sts")),
		MTASTSRootCAFile: l.str("delivery.mta_sts_root_ca_file"),
		DANE:             l.boolean("delivery.dane"),
		Egress:           l.egress(),
	}
}

// prefixes reads a list of CIDRs. A bare address means that one host, and
// host bits are masked off, because membership tests compare masked prefixes.
func (l *loader) prefixes(key string) []netip.Prefix {
	items := l.strList(key)
	out := make([]netip.Prefix, 0, len(items))
	for i, s := range items {
		p, err := parsePrefix(s)
		if err != nil {
			l.failAt(key, fmt.Sprintf("[%d]", i), "%q is not a network such as 10.0.0.0/8 or 192.0.2.1", s)
			return nil
		}
		out = append(out, p)
	}
	return out
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("zone not allowed")
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}
