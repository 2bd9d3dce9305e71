package submission

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// connLimiter bounds concurrent connections in total and per client
// address, so one noisy host cannot take every slot.
type connLimiter struct {
	mu     sync.Mutex
	max    int
	perIP  int
	total  int
	counts map[netip.Addr]int
}

func newConnLimiter(max, perIP int) *connLimiter {
	return &connLimiter{max: max, perIP: perIP, counts: map[netip.Addr]int{}}
}

func (l *connLimiter) acquire(ip netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.max || l.counts[ip] >= l.perIP {
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
	auth   *authLimiter
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
		if l.auth != nil && l.auth.locked(ip) {
			l.log.Warn("connection refused: address locked out after auth failures", "client", ip.String())
			refuse(c, "421 4.7.0 Too many authentication failures, try again later\r\n")
			continue
		}
		if !l.limits.acquire(ip) {
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
