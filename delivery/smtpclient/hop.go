package smtpclient

import (
	"net"
	"strings"

	"github.com/relayq/relayq/delivery/egress"
)

// Hop is one next-hop host that a delivery attempt may connect to. A list of
// hops is tried in order, each as a failover for the one before it (RFC 5321
// section 5.1): the message is sent to at most one of them per attempt.
type Hop struct {
	// Host is a host name or an IP address, without port or brackets. Names
	// are resolved at dial time so that every address of a host can be tried.
	Host string
	// Port is "25" for MX and implicit-MX hops, or as configured for static
	// routes and smarthosts.
	Port string
	// MX is the MX, route or smarthost name the hop came from, for logs and
	// the DSN Remote-MTA field.
	MX string
	// ImplicitTLS means TLS starts on connect (RFC 8314 section 3.3) rather
	// than with STARTTLS.
	ImplicitTLS bool
	// Smarthost marks the hops of the configured smarthost: the Dialer uses
	// Dialer.Smarthost's TLS mode and credentials for these hops only, so a
	// static route never receives the smarthost password.
	Smarthost bool
	// MaxUses closes a cached connection to the hop once it has carried
	// this many messages (traffic shaping's max_messages_per_connection);
	// 0 means the default, 100.
	MaxUses int
	// TLS is the verified-TLS policy of an MX hop (DANE, MTA-STS); nil
	// means Dialer.TLS applies, as for routes.
	TLS *HopTLS
	// Source is the local address to connect from and its EHLO name
	// (delivery.egress); nil means no bind and Dialer.Hostname. Cached
	// connections are kept per source and hop.
	Source *egress.Source
}

// Addr returns the hop's "host:port" dial address (IPv6 literals bracketed).
func (h Hop) Addr() string { return net.JoinHostPort(h.Host, h.Port) }

// SmarthostTLS is how a smarthost connection is secured (Smarthost.TLS).
// Values are matched without regard to case.
type SmarthostTLS string

// The TLS modes for smarthost hops. With TLS, the certificate is always
// verified: a password goes there.
const (
	// SmarthostSTARTTLS requires STARTTLS (RFC 3207) on the submission
	// port, 587 unless given.
	SmarthostSTARTTLS SmarthostTLS = "starttls"
	// SmarthostImplicit starts TLS on connect (RFC 8314), port 465 unless
	// given.
	SmarthostImplicit SmarthostTLS = "implicit"
	// SmarthostNoTLS never starts TLS; credentials then need
	// AllowInsecureAuth.
	SmarthostNoTLS SmarthostTLS = "none"
)

// normal is t in lower case, as the constants are spelt.
func (t SmarthostTLS) normal() SmarthostTLS { return SmarthostTLS(strings.ToLower(string(t))) }

// Implicit reports whether t means TLS from the first byte.
func (t SmarthostTLS) Implicit() bool { return t.normal() == SmarthostImplicit }

// Smarthost is an upstream relay that takes all mail not otherwise routed.
type Smarthost struct {
	// Address is "host:port"; the port defaults to 465 for TLS "implicit"
	// and 587 otherwise (RFC 8314 / RFC 6409 submission ports).
	Address string
	// Fallback lists further "host:port" relays tried in order when the
	// ones before fail before a transaction starts.
	Fallback []string
	// Username and Password, when Username is set, are sent with AUTH PLAIN
	// (or LOGIN when that is the only mechanism offered).
	Username, Password string
	// TLS is SmarthostSTARTTLS (the default, also for ""), SmarthostImplicit
	// or SmarthostNoTLS.
	TLS SmarthostTLS
	// AllowInsecureAuth permits AUTH on a connection without TLS. Off by
	// default so a misconfiguration never leaks the password in clear.
	AllowInsecureAuth bool
}
