package submission

import (
	"errors"
	"net"
	"sync"
	"time"
)

// limitedConn is one client connection: it gives its limiter slot back when
// closed, and it carries the state a graceful shutdown needs.
//
// Shutdown must hang up on every session waiting for a command but never on
// one in the middle of a mail transaction. Closing sockets from outside
// races go-smtp: it writes the 354 before it calls Session.Data, and with
// BDAT (RFC 3030) it reads the first chunk while Data starts on another
// goroutine, so a session that looked idle a moment ago may be receiving
// a message. Instead, once shutting down, the connection refuses to read
// unless a transaction is open: from the first accepted RCPT until Reset
// (which go-smtp calls after the reply to DATA or BDAT LAST, and on RSET).
// Both ends of that window are set by the session's own goroutine before
// it reads again, so no read can slip between them.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()

	// sessionEnd is when the whole session must be over (SessionTimeout):
	// every read deadline is capped by it.
	sessionEnd time.Time

	mu       sync.Mutex
	inTxn    bool // a mail transaction is open: a recipient was accepted
	closing  bool // the server is shutting down
	timedOut error
}

// aLongTimeAgo is a read deadline that has already passed, which wakes a
// read blocked waiting for the next command.
var aLongTimeAgo = time.Unix(1, 0)

// refusing reports whether the connection must not read any more: the
// server is shutting down and no transaction is open.
func (c *limitedConn) refusing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing && !c.inTxn
}

// Read returns net.ErrClosed instead of the next command once the server is
// shutting down; go-smtp then ends the session quietly.
//
// A read deadline that passes is final: every later Read fails with the
// same timeout. go-smtp sets a fresh read_timeout
// before each command line, but its line reader returns a line cut off by
// the deadline as if it were complete, so without this a client trickling
// bytes would get each fragment run as a command and a new deadline, and
// the session would live on. So go-smtp answers at most that one
// fragment, then its next read fails: 421 4.4.2 and the connection is closed. The
// deadline itself is absolute, so bytes arriving never extend it.
func (c *limitedConn) Read(p []byte) (int, error) {
	if c.refusing() {
		return 0, net.ErrClosed
	}
	if err := c.expired(); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if err != nil {
		if c.refusing() {
			return n, net.ErrClosed
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.mu.Lock()
			c.timedOut = err
			c.mu.Unlock()
		}
	}
	return n, err
}

// expired returns the timeout that ended the session, if one did.
func (c *limitedConn) expired() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timedOut
}

// SetReadDeadline keeps the expired deadline set by shutdown, so go-smtp
// re-arming its per-command timeout cannot wake an idle session back up,
// and caps every deadline at the end of the session.
func (c *limitedConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.sessionEnd.IsZero() && (t.IsZero() || t.After(c.sessionEnd)) {
		t = c.sessionEnd
	}
	if c.closing && !c.inTxn {
		t = aLongTimeAgo
	}
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline is SetReadDeadline and SetWriteDeadline, so the read half
// keeps the same rule.
func (c *limitedConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

// setInTransaction marks a mail transaction opening (first recipient
// accepted) or ending (Reset). When one ends during shutdown, the next
// command read fails at once.
func (c *limitedConn) setInTransaction(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inTxn = on
	if !on && c.closing {
		_ = c.Conn.SetReadDeadline(aLongTimeAgo)
	}
}

// shutdown stops the connection reading further commands: a read blocked
// on the next command returns now, and an open transaction may finish.
func (c *limitedConn) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	if !c.inTxn {
		_ = c.Conn.SetReadDeadline(aLongTimeAgo)
	}
}

// Close gives the limiter slot back once.
func (c *limitedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// liveConns is the set of open client connections.
type liveConns struct {
	mu      sync.Mutex
	conns   map[*limitedConn]struct{}
	closing bool
}

func (l *liveConns) add(c *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns == nil {
		l.conns = map[*limitedConn]struct{}{}
	}
	l.conns[c] = struct{}{}
	if l.closing {
		// Accepted just before the listener closed: greet and hang up.
		c.shutdown()
	}
}

func (l *liveConns) remove(c *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, c)
}

// shutdown ends every session at its next command; a session with a
// transaction open finishes its message first.
func (l *liveConns) shutdown() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closing = true
	for c := range l.conns {
		c.shutdown()
	}
}
