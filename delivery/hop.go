package delivery

import "net"

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
}

// Addr returns the hop's "host:port" dial address (IPv6 literals bracketed).
func (h Hop) Addr() string { return net.JoinHostPort(h.Host, h.Port) }
