package submission

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/relayq/relayq/internal/authlimit"
)

// connLimiter bounds concurrent connections in total and per client
// address, over every listener (SMTP, HTTP submission, admin), so one
// noisy host cannot take every slot. Each connection is one file
// descriptor, so its counts are also how many descriptors clients hold.
type connLimiter struct {
	mu    sync.Mutex
	max   int
	perIP int
	// otherCap, when positive, is the total past which only SMTP
	// connections are taken: the descriptors above it (up to the soft
	// RLIMIT_NOFILE) are kept for SMTP clients, delivery and the queue,
	// so HTTP clients cannot exhaust them.
	otherCap int
	total    int
	counts   map[netip.Addr]int
}

// connKind is which listener a connection came in on.
type connKind int

const (
	connSMTP  connKind = iota // may use the descriptor reserve
	connOther                 // HTTP submission, admin: stop at otherCap
)

// defaultFDReserve is how many descriptors below the soft RLIMIT_NOFILE
// are kept from HTTP connections: room for SMTP clients, delivery's
// outbound connections (delivery.workers, 32 by default), the queue file,
// listeners and logs.
const defaultFDReserve int = 256

func newConnLimiter(max, perIP, otherCap int) *connLimiter {
	return &connLimiter{max: max, perIP: perIP, otherCap: otherCap, counts: map[netip.Addr]int{}}
}

// fdCap is the connection total at which connOther connections stop:
// the soft RLIMIT_NOFILE minus reserve, or 0 (no cap) when the limit is
// unknown or unlimited.
func fdCap(reserve int) int {
	soft := softFDLimit()
	if soft <= 0 {
		return 0
	}
	return max(soft-reserve, 1)
}

func (l *connLimiter) acquire(ip netip.Addr, kind connKind) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.max || l.counts[ip] >= l.perIP {
		return false
	}
	if kind == connOther && l.otherCap > 0 && l.total >= l.otherCap {
		return false
	}
	l.total++
	l.counts[ip]++
	return true
}

func (l *connLimiter) release(ip netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.counts[ip]--; l.counts[ip] <= 0 {
		delete(l.counts, ip)
	}
}

// limitListener refuses connections over the limits with 421 (RFC 5321
// section 3.8) right at accept, before any session state exists.
type limitListener struct {
	net.Listener
	limits *connLimiter
	log    *slog.Logger
	obs    Observer
	auth   *authlimit.Limiter
	live   *liveConns
	// sessionTimeout bounds each connection's whole life.
	sessionTimeout time.Duration
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		if l.auth != nil && l.auth.Locked(ip) {
			l.log.Warn("connection refused: address locked out after auth failures", "client", ip.String())
			refuse(c, "421 4.7.0 Too many authentication failures, try again later\r\n")
			continue
		}
		if !l.limits.acquire(ip, connSMTP) {
			l.log.Warn("connection refused: too many connections", "client", ip.String())
			if l.obs != nil {
				l.obs.Rejected(RejectConnections)
			}
			refuse(c, "421 4.7.0 Too many connections, try again later\r\n")
			continue
		}
		if l.obs != nil {
			l.obs.SessionOpened()
		}
		l.log.Info("connect", "client", ip.String())
		lc := &limitedConn{Conn: c}
		if l.sessionTimeout > 0 {
			lc.sessionEnd = time.Now().Add(l.sessionTimeout)
			_ = lc.SetReadDeadline(time.Time{})
		}
		lc.release = func() {
			l.limits.release(ip)
			l.live.remove(lc)
			if l.obs != nil {
				l.obs.SessionClosed()
			}
		}
		l.live.add(lc)
		return lc, nil
	}
}

// slotListener takes a connection slot for every connection a non-SMTP
// listener (HTTP submission, admin) accepts, from the limiter SMTP uses,
// and closes a connection over the limits at once, before it costs a
// goroutine or a buffer: HTTP keep-alive lets an idle connection live for
// minutes, so counting requests alone left connections unbounded.
type slotListener struct {
	net.Listener
	limits *connLimiter
	log    *slog.Logger
	obs    Observer
}

func (l *slotListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		if !l.limits.acquire(ip, connOther) {
			l.log.Warn("connection refused: too many connections", "client", ip.String(), "listener", l.Addr().String())
			if l.obs != nil {
				l.obs.Rejected(RejectConnections)
			}
			c.Close()
			continue
		}
		sc := &slotConn{Conn: c}
		sc.release = func() { l.limits.release(ip) }
		return sc, nil
	}
}

// slotConn gives its slot back once, at the first Close.
type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

func refuse(c net.Conn, line string) {
	go func() {
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Write([]byte(line))
		c.Close()
	}()
}

// underlying finds our limitedConn below a TLS connection, if any.
func underlying(c net.Conn) *limitedConn {
	for {
		switch v := c.(type) {
		case *limitedConn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
}
