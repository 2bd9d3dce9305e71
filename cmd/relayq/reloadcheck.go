package main

// SIGHUP applies what it can (reload in serve.go). Every other changed key
// needs a restart; each one gets a warning naming it, so that "configuration
// reloaded" never hides a change that did not happen.

import (
	"log/slog"
	"strings"

	"github.com/relayq/relayq/config"
)

// reloadable are the keys, or key prefixes ending in ".", that reload
// applies to the running relay. Add a key here when reload starts applying
// it; any key not listed is reported as waiting for a restart.
var reloadable = []string{
	"submission.trusted_networks",
	"submission.users",
	"submission.api_keys", // in the same policy as users (SetPolicy)
	"submission.tls.",     // a new certificate; turning TLS on or off: see tlsToggled
	"retry.",
	"delivery.routes",
	"delivery.smarthost.",
	"delivery.dns_server",
	"delivery.tls",
	"delivery.connect_timeout",
	"delivery.command_timeout",
	"delivery.greeting_timeout",
	"shaping.", // Shaper.SetPolicy, then Engine.Update resolves targets again
	"dkim.",    // signer.Update: key rotation without a restart
	"suppression.",
	"bounces.complaint_expire", // in the suppression list's config (SetConfig)
	"tenants",                  // the directory is part of the policy (SetPolicy)
}

func isReloadable(key string) bool {
	for _, r := range reloadable {
		if key == r || (strings.HasSuffix(r, ".") && strings.HasPrefix(key, r)) {
			return true
		}
	}
	return false
}

// reloadDiff compares the running settings with a newly loaded file's. It
// returns the keys that changed and are applied now, the keys that changed
// but need a restart, and the settings that are now running: the new values
// of applied keys and the old values of the rest (so that a second SIGHUP
// warns again about a change still waiting).
func reloadDiff(running, loaded []config.Setting) (applied, restart []string, now []config.Setting) {
	old := make(map[string]config.Setting, len(running))
	for _, s := range running {
		old[s.Key] = s
	}
	toggled := tlsToggled(running, loaded)
	for _, s := range loaded {
		o, ok := old[s.Key]
		switch {
		case ok && o.Value == s.Value:
			now = append(now, s)
		case isReloadable(s.Key) && !(toggled && strings.HasPrefix(s.Key, "submission.tls.")):
			applied = append(applied, s.Key)
			now = append(now, s)
		default:
			restart = append(restart, s.Key)
			if ok {
				now = append(now, o)
			}
		}
	}
	return applied, restart, now
}

// tlsToggled reports whether the certificate went from unset to set or
// back: the listeners were built with or without TLS, which only a
// restart changes.
func tlsToggled(a, b []config.Setting) bool {
	return tlsOn(a) != tlsOn(b)
}

func tlsOn(set []config.Setting) bool {
	for _, s := range set {
		if s.Key == "submission.tls.cert_file" {
			return s.Value != `""`
		}
	}
	return false
}

// logReload reports a reload: one warning per key that needs a restart,
// then what was applied.
func logReload(log *slog.Logger, name string, applied, restart []string) {
	for _, k := range restart {
		log.Warn("config change not applied: restart relayq for it to take effect", "key", k)
	}
	msg := "configuration reloaded"
	if len(restart) > 0 {
		msg = "configuration partly reloaded"
	}
	log.Info(msg, "config", name, "applied", strings.Join(applied, ","), "restart_needed", strings.Join(restart, ","))
}
