package config

import "time"

// BounceLimits bound the bounce listener (bounces.limits): anyone may send
// to a VERP address, and every report accepted is recorded and forwarded
// to the application's bounce mailbox.
type BounceLimits struct {
	// PerClient is how many reports one client (IPv4 address, IPv6 /64)
	// may hand in per Window; 0 = no limit.
	PerClient int
	// PerAddress is how many reports one VERP address may receive per
	// Window; 0 = no limit.
	PerAddress int
	Window     time.Duration
	// DuplicateWindow is how long a report is remembered so the same
	// report again is neither recorded nor forwarded again; 0 = never.
	DuplicateWindow time.Duration
}

// maxReportLimit keeps a limit where a token bucket's float arithmetic is
// exact and a typo (an extra digit or three) is caught.
const maxReportLimit = 10_000_000

func (l *loader) bounceLimits() BounceLimits {
	return BounceLimits{
		PerClient:       int(l.integer("bounces.limits.per_client")),
		PerAddress:      int(l.integer("bounces.limits.per_address")),
		Window:          l.duration("bounces.limits.window"),
		DuplicateWindow: l.duration("bounces.limits.duplicate_window"),
	}
}

func (l *loader) validateBounceLimits(b *BounceLimits) {
	for key, n := range map[string]int{"bounces.limits.per_client": b.PerClient, "bounces.limits.per_address": b.PerAddress} {
		if n < 0 || n > maxReportLimit {
			l.failf(key, "%d must be from 0 (no limit) to %d", n, maxReportLimit)
		}
	}
	if (b.PerClient > 0 || b.PerAddress > 0) && b.Window < time.Second {
		l.failf("bounces.limits.window", "%v must be at least 1s while bounces.limits.per_client or per_address is set", b.Window)
	}
	if b.DuplicateWindow < 0 {
		l.failf("bounces.limits.duplicate_window", "%v is negative (0 remembers no report)", b.DuplicateWindow)
	}
}
