package main

import (
	"log/slog"
	"net"
	"net/netip"

	"github.com/relayq/relayq/internal/proxyproto"
	"github.com/relayq/relayq/submission"
)

// proxyWrap is the PROXY protocol of a group of listeners whose proxies
// are trusted (from the config key key), or nil when the list is empty
// (the protocol off, the listeners as they were).
func proxyWrap(trusted []netip.Prefix, key string, log *slog.Logger) submission.ListenerWrap {
	if len(trusted) == 0 {
		return nil
	}
	return func(l net.Listener, refusal string) net.Listener {
		return proxyproto.Wrap(l, proxyproto.Options{Trusted: trusted, Key: key, Refusal: refusal, Logger: log})
	}
}
