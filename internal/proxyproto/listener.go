package proxyproto

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// DefaultHeaderTimeout bounds the wait for a trusted proxy's header when
// Options.HeaderTimeout is 0. A proxy sends its header with the
// connection's first segment, so this only ends connections that are not
// from a proxy speaking the protocol.
const DefaultHeaderTimeout = 10 * time.Second

// maxPending bounds the headers being read at once; past it the listener
// stops accepting until one is done (the kernel's backlog holds the rest).
const maxPending = 256

// refusalWrite bounds the write of Options.Refusal to a refused peer;
// refusalLinger the wait for it to close after, and refusalDrain the bytes
// read from it meanwhile (short: a flood of strangers holds a descriptor
// each for that long).
const (
	refusalWrite  = 5 * time.Second
	refusalLinger = time.Second
	refusalDrain  = 64 << 10
)

// Options configure Wrap.
type Options struct {
	// Trusted are the networks of the proxies allowed (and required) to
	// send a header. Empty: Wrap returns the listener unchanged.
	Trusted []netip.Prefix
	// Key names the configuration key Trusted came from, for log lines.
	Key string
	// Refusal is written to a refused connection before it is closed, so
	// that its client learns why (an SMTP 554 line); "" closes at once
	// (implicit TLS and HTTP, where a plain line would not be understood).
	Refusal string
	// HeaderTimeout bounds the wait for a trusted peer's header;
	// DefaultHeaderTimeout when 0.
	HeaderTimeout time.Duration
	// Logger receives one line per refused connection; slog.Default when nil.
	Logger *slog.Logger
}

// Wrap returns l with the PROXY protocol required from o.Trusted and every
// other peer refused (see the package's invariants). Closing the returned
// listener closes l.
func Wrap(l net.Listener, o Options) net.Listener {
	if len(o.Trusted) == 0 {
		return l
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	w := &listener{
		Listener: l,
		o:        o,
		ready:    make(chan net.Conn),
		errs:     make(chan error),
		done:     make(chan struct{}),
		pending:  make(chan struct{}, maxPending),
	}
	go w.loop()
	return w
}

type listener struct {
	net.Listener
	o       Options
	ready   chan net.Conn // connections whose header was read
	errs    chan error    // the raw listener's Accept errors, in order
	done    chan struct{} // closed by Close
	once    sync.Once
	pending chan struct{} // a slot per header being read
}

// Accept returns the next connection whose header was read and believed.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close closes the raw listener; connections still being read are closed
// as their header arrives.
func (l *listener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.done) })
	return err
}

// loop accepts raw connections and starts a header read for each trusted
// one. An Accept error is handed to the caller's Accept, whose own
// back-off (go-smtp's, net/http's) paces a retry.
func (l *listener) loop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			select {
			case l.errs <- err:
			case <-l.done:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		peer := addrIP(c.RemoteAddr())
		if !l.trusted(peer) {
			l.o.Logger.Warn("PROXY protocol: connection refused: the peer is not a trusted proxy", "peer", peer.String(), "key", l.o.Key)
			l.refuse(c)
			continue
		}
		select {
		case l.pending <- struct{}{}:
		case <-l.done:
			c.Close()
			return
		}
		go l.handshake(c, peer)
	}
}

// handshake reads c's header and hands the connection to Accept, or
// refuses it.
func (l *listener) handshake(c net.Conn, peer netip.Addr) {
	pc, err := readHeader(c, l.o.HeaderTimeout)
	<-l.pending
	if err != nil {
		l.o.Logger.Warn("PROXY protocol: connection refused: "+err.Error(), "peer", peer.String(), "key", l.o.Key)
		l.refuse(c)
		return
	}
	l.o.Logger.Debug("PROXY protocol: client through proxy", "client", pc.RemoteAddr().String(), "peer", peer.String())
	select {
	case l.ready <- pc:
	case <-l.done:
		c.Close()
	}
}

func (l *listener) trusted(a netip.Addr) bool {
	for _, p := range l.o.Trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// refuse writes the refusal, if any, and closes c, without holding up the
// accept loop. After the refusal it closes its side first and reads what
// the peer still sends (briefly, a bounded amount): closing with unread
// bytes would send a reset, which can destroy the refusal before the peer
// reads it.
func (l *listener) refuse(c net.Conn) {
	if l.o.Refusal == "" {
		c.Close()
		return
	}
	go func() {
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(refusalWrite))
		if _, err := c.Write([]byte(l.o.Refusal)); err != nil {
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			_ = c.SetReadDeadline(time.Now().Add(refusalLinger))
			_, _ = io.CopyN(io.Discard, c, refusalDrain)
		}
	}()
}

// addrIP is a as a plain (unmapped) IP address; the zero Addr, which no
// network contains, when a is not an IP address.
func addrIP(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			return ip.Unmap()
		}
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}
