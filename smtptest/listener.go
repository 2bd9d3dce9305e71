package smtptest

import (
	"bytes"
	"net"
	"sync"
)

// trackListener counts accepted connections and remembers the open ones so
// that Close can end them all, including ones a delay is holding.
type trackListener struct {
	net.Listener
	srv *Server

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

type trackedConn struct {
	net.Conn
	l    *trackListener
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		c.l.srv.rec.touch() // waiters on "fewer connections open" re-check
	})
	return c.Conn.Close()
}

func (l *trackListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, l: l}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		c.Close()
		return nil, net.ErrClosed
	}
	l.conns[tc] = struct{}{}
	l.mu.Unlock()
	l.srv.rec.addConn(hostOf(c.RemoteAddr().String()))
	return tc, nil
}

// openFrom counts the open connections from ip, the caller's included.
func (l *trackListener) openFrom(ip string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for c := range l.conns {
		if hostOf(c.RemoteAddr().String()) == ip {
			n++
		}
	}
	return n
}

// closeAll closes the listener and every open connection.
func (l *trackListener) closeAll() error {
	l.mu.Lock()
	l.closed = true
	conns := make([]*trackedConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	err := l.Listener.Close()
	for _, c := range conns {
		c.Close()
	}
	return err
}

// greetListener runs greeting rules before go-smtp sees a connection:
// go-smtp always greets with 220, so a scripted 421 greeting, a slow
// greeting or a connection dropped at greeting must happen here. It sits
// above the TLS listener so that with implicit TLS the 421 is encrypted.
type greetListener struct {
	inner net.Listener
	srv   *Server

	ready chan net.Conn
	errc  chan error
	done  chan struct{}
	once  sync.Once
}

func newGreetListener(inner net.Listener, srv *Server) *greetListener {
	g := &greetListener{
		inner: inner,
		srv:   srv,
		ready: make(chan net.Conn),
		errc:  make(chan error, 1),
		done:  make(chan struct{}),
	}
	srv.wg.Add(1)
	go g.loop()
	return g
}

func (g *greetListener) loop() {
	defer g.srv.wg.Done()
	for {
		c, err := g.inner.Accept()
		if err != nil {
			select {
			case g.errc <- err:
			case <-g.done:
			}
			return
		}
		g.srv.wg.Add(1)
		go func() {
			defer g.srv.wg.Done()
			if !g.srv.greet(c) {
				return
			}
			select {
			case g.ready <- c:
			case <-g.done:
				c.Close()
			}
		}()
	}
}

func (g *greetListener) Accept() (net.Conn, error) {
	select {
	case c := <-g.ready:
		return c, nil
	case err := <-g.errc:
		return nil, err
	case <-g.done:
		return nil, net.ErrClosed
	}
}

func (g *greetListener) Close() error {
	g.once.Do(func() { close(g.done) })
	return nil // the server closes the inner listeners itself
}

func (g *greetListener) Addr() net.Addr { return g.inner.Addr() }

// no8BitListener hands go-smtp connections whose EHLO reply lacks the
// 8BITMIME line go-smtp always writes (Config.No8BitMIME). go-smtp writes
// a reply in one Write, and only replies, so the line is never split.
type no8BitListener struct{ net.Listener }

func (l no8BitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return no8BitConn{c}, nil
}

type no8BitConn struct{ net.Conn }

var line8BitMIME = []byte("250-8BITMIME\r\n")

func (c no8BitConn) Write(p []byte) (int, error) {
	if !bytes.Contains(p, line8BitMIME) {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(bytes.ReplaceAll(p, line8BitMIME, nil)); err != nil {
		return 0, err
	}
	return len(p), nil
}
