// Package proxyproto puts the PROXY protocol (v1 and v2, as HAProxy
// specifies it) under a listener, so that relayq behind a TCP load
// balancer sees each client's own address. It is the one place the
// client address of a proxied connection is resolved: every listener
// that takes it (SMTP, implicit TLS, HTTP submission, bounces) wraps its
// raw listener with Wrap, below the connection limits and TLS, and
// everything above reads the client from Conn.RemoteAddr as before.
//
// The header's bytes are parsed by github.com/pires/go-proxyproto's Read
// (pure, fuzzed upstream); this package decides whom to believe and what
// a connection becomes.
//
// Invariants:
//   - A header is read only from a peer inside Options.Trusted; from such
//     a peer it is required. A connection from any other peer is refused
//     (Options.Refusal written, then closed) before a byte of it is read,
//     header or not: an enabled listener is reachable only through its
//     proxies, and an address a stranger claims is never used.
//   - A trusted peer's connection whose header is missing, malformed,
//     late (Options.HeaderTimeout) or carries a non-IP client address is
//     refused the same way, and logged with the reason.
//   - Accept never waits on a peer: headers are read on a goroutine per
//     connection (at most maxPending at once), so a slow proxy cannot stall
//     the listener; a connection is handed to Accept with its client
//     address already known, so accept-time limits and lockouts count the
//     client, not the balancer.
//   - The bytes after the header reach the reader unchanged (a TLS
//     ClientHello or an HTTP request sent with the header included).
//   - A LOCAL header (the proxy's own health check) and v1's UNKNOWN keep
//     the proxy's address, as the specification says.
//   - With no trusted networks, Wrap returns the listener unchanged.
package proxyproto
