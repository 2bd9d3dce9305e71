// Package hostcheck is the DNS-rebinding rule of relayq's HTTP listeners
// that serve a browser's operator on this host (the admin API and
// console, smtptest's HTTP API behind fakemx --http): which Host headers
// they answer.
//
// DNS rebinding points a name the attacker answers at 127.0.0.1 so that
// a page of that name reads the listener as its own origin; the Host
// header still carries the attacker's name. So only names are checked:
// an IP literal or "localhost" cannot be rebound and is accepted with any
// port (ssh -L tunnels, container port mappings and kubectl port-forward
// change the address and port the client sees). Any other name must be
// configured, as "name" (any port) or "name:port". An empty Host (HTTP/1.0)
// names nothing and is accepted.
//
// A leaf: it imports no other relayq package, so that the public
// smtptest may use it.
package hostcheck
