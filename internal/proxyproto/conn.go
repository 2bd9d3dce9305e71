package proxyproto

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"time"

	header "github.com/pires/go-proxyproto"
)

// Conn is a connection whose PROXY header was read: RemoteAddr is the
// client the header names, Proxy the peer that sent it.
type Conn struct {
	net.Conn
	rest   []byte // bytes the header's reader took past the header
	client net.Addr
}

// RemoteAddr is the client's address from the header (the proxy's for a
// LOCAL or UNKNOWN header).
func (c *Conn) RemoteAddr() net.Addr { return c.client }

// Proxy is the address of the proxy the connection came from.
func (c *Conn) Proxy() net.Addr { return c.Conn.RemoteAddr() }

// NetConn is the connection to the proxy, as tls.Conn's NetConn.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// Read returns the bytes read past the header first, then the connection's.
func (c *Conn) Read(p []byte) (int, error) {
	if len(c.rest) > 0 {
		n := copy(p, c.rest)
		c.rest = c.rest[n:]
		if len(c.rest) == 0 {
			c.rest = nil
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// errNoHeader is a trusted peer's connection that did not begin with a header.
var errNoHeader = errors.New("no PROXY header from a trusted proxy (it must send one: send-proxy or send-proxy-v2 in HAProxy)")

// readHeader reads c's header within timeout and returns the connection
// that yields what follows it.
func readHeader(c net.Conn, timeout time.Duration) (*Conn, error) {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(c, 256)
	h, err := header.Read(br)
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return nil, err
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return nil, fmt.Errorf("no PROXY header within %v", timeout)
	case errors.Is(err, header.ErrNoProxyProtocol):
		return nil, errNoHeader
	case err != nil:
		return nil, fmt.Errorf("bad PROXY header: %w", err)
	}
	client, err := clientAddr(h, c.RemoteAddr())
	if err != nil {
		return nil, err
	}
	pc := &Conn{Conn: c, client: client}
	if n := br.Buffered(); n > 0 {
		rest, _ := br.Peek(n)
		pc.rest = append([]byte(nil), rest...)
	}
	return pc, nil
}

// clientAddr is the client a header names: its source for a proxied TCP
// connection, the proxy itself for LOCAL (the proxy's own health check)
// and v1's UNKNOWN, as the specification says. A proxied connection of
// another kind (UDP, a Unix socket) names no client an SMTP or HTTP
// listener can use, so it is refused.
func clientAddr(h *header.Header, proxy net.Addr) (net.Addr, error) {
	if h.Command.IsLocal() {
		return proxy, nil
	}
	src, ok := h.SourceAddr.(*net.TCPAddr)
	if !ok || !h.TransportProtocol.IsStream() || src.IP == nil {
		return nil, fmt.Errorf("PROXY header names no TCP client (address family and transport %#02x)", byte(h.TransportProtocol))
	}
	return src, nil
}
