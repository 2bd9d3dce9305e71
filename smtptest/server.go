package smtptest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/smtptest/internal/persona"
)

// Server is a running scriptable SMTP server. Create it with NewServer in
// tests or Start elsewhere; Close stops it.
type Server struct {
	cfg      Config
	users    map[string]string
	now      func() time.Time
	hostname string
	// lookupAddr is the reverse lookup of a persona's ptr check
	// (net.DefaultResolver's; tests replace it).
	lookupAddr func(ctx context.Context, addr string) ([]string, error)

	state   atomic.Pointer[scriptState] // replaced whole by SetScript and Reset
	catalog persona.Catalog             // the personas a script may name
	grey    *greylist
	rec     *recorder
	reports *reports
	cert    *Cert // nil without TLS

	smtp *smtp.Server
	tl   *trackListener
	gl   *greetListener
	addr string

	hookMu sync.Mutex // serialises OnEvent and OnMessage calls

	done      chan struct{}
	served    chan struct{}
	wg        sync.WaitGroup // greeting goroutines and the accept loop
	closeOnce sync.Once
	closeErr  error
}

// NewServer starts a server on 127.0.0.1 with a random port, configured by
// opts, and closes it when the test ends. It fails the test on error.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var cfg Config
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			t.Fatalf("smtptest: option: %v", err)
		}
	}
	s, err := Start(cfg)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Start listens on cfg.Addr (default 127.0.0.1:0) and serves until Close.
func Start(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		users:    maps.Clone(cfg.Users),
		now:      cfg.Clock,
		hostname: cfg.Hostname,
		grey:     newGreylist(),
		rec:      newRecorder(cfg.DiscardBodies, cfg.DiscardEvents),
		reports:  newReports(),
		done:     make(chan struct{}),
		served:   make(chan struct{}),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.hostname == "" {
		s.hostname = "fakemx.localhost"
	}
	if err := s.initScript(cfg); err != nil {
		return nil, err
	}
	addr := cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}

	srv := smtp.NewServer(backend{s})
	srv.Domain = s.hostname
	srv.AllowInsecureAuth = cfg.AllowInsecureAuth
	srv.MaxMessageBytes = cfg.MaxMessageBytes
	srv.MaxRecipients = cfg.MaxRecipients
	srv.ReadTimeout = cfg.ReadTimeout
	srv.EnableSMTPUTF8 = cfg.SMTPUTF8
	// A nil *log.Logger in the interface would not compare equal to nil.
	srv.ErrorLog = log.New(io.Discard, "", 0)
	if cfg.ErrorLog != nil {
		srv.ErrorLog = cfg.ErrorLog
	}
	if cfg.StartTLS || cfg.ImplicitTLS {
		cert := cfg.Cert
		if cert == nil {
			var err error
			if cert, err = NewCert(); err != nil {
				return nil, err
			}
		}
		s.cert = cert
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert.TLS}}
	}
	s.smtp = srv

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("smtptest: listen %s: %w", addr, err)
	}
	s.addr = ln.Addr().String()
	s.tl = &trackListener{Listener: ln, srv: s, conns: make(map[*trackedConn]struct{})}
	var inner net.Listener = s.tl
	if cfg.ImplicitTLS {
		inner = tls.NewListener(s.tl, srv.TLSConfig)
	}
	s.gl = newGreetListener(inner, s)
	s.wg.Add(1)
	go s.runReports()
	go func() {
		defer close(s.served)
		var ln net.Listener = s.gl
		if cfg.No8BitMIME {
			ln = no8BitListener{s.gl}
		}
		srv.Serve(ln) // returns once the listeners are closed by Close
	}()
	return s, nil
}

// initScript loads the personas and compiles the first script.
func (s *Server) initScript(cfg Config) error {
	cat, err := loadPersonas(cfg.PersonaFiles)
	if err != nil {
		return err
	}
	s.catalog = cat
	st, err := newScriptState(cfg.script(), cat)
	if err != nil {
		return fmt.Errorf("smtptest: %w", err)
	}
	s.state.Store(st)
	return nil
}

// Addr returns the listening address, "127.0.0.1:port".
func (s *Server) Addr() string { return s.addr }

// Close stops listening, ends every connection (also ones in a scripted
// delay) and waits for the server's goroutines. It is safe to call twice.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		s.gl.Close()
		err := s.tl.closeAll()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
		// Serve must have returned before Shutdown waits on go-smtp's
		// WaitGroup, or a late Add could race with that Wait.
		<-s.served
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if serr := s.smtp.Shutdown(ctx); serr != nil && err == nil {
			err = fmt.Errorf("smtptest: shutdown: %w", serr)
		}
		s.wg.Wait()
		s.closeErr = err
	})
	return s.closeErr
}

// pause waits d on a real timer and reports false if the server closed first.
func (s *Server) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.done:
		return false
	}
}

// record records e, stamped with the time, and calls OnEvent.
func (s *Server) record(e Event) {
	e.Time = s.now()
	s.rec.addEvent(e)
	if s.cfg.OnEvent != nil {
		s.hookMu.Lock()
		defer s.hookMu.Unlock()
		s.cfg.OnEvent(e)
	}
}

// message records an accepted message, calls OnMessage and returns its ID.
func (s *Server) message(m Message) string {
	m.ID = s.rec.addMessage(m)
	if s.cfg.OnMessage != nil {
		s.hookMu.Lock()
		defer s.hookMu.Unlock()
		s.cfg.OnMessage(m)
	}
	return m.ID
}

// greet applies the connection limit, greeting rules and greeting rate
// limits to a new connection and reports whether go-smtp should go on to
// greet and serve it.
func (s *Server) greet(c net.Conn) bool {
	client := c.RemoteAddr().String()
	ip := hostOf(client)
	st := s.script()
	refuse := func(e *smtp.SMTPError, by Answerer) bool {
		// RFC 5321 section 3.1: a server refusing service may greet with
		// 421 (or 554) and close; go-smtp cannot, so it is written here.
		s.record(Event{Client: client, Stage: StageGreeting, Reply: replyLine(e), By: by})
		writeReplyAndClose(c, e)
		return false
	}
	if max := st.ConnLimit.Max; max > 0 && s.tl.openFrom(ip) > max {
		return refuse(st.ConnLimit.smtpError(), ByConnLimit)
	}
	r, ok := st.rules.decide(StageGreeting, ip)
	if ok && r.Delay > 0 && !s.pause(r.Delay) {
		c.Close()
		return false
	}
	switch {
	case ok && r.Drop:
		s.record(Event{Client: client, Stage: StageGreeting, Reply: replyDropped, By: ByRule})
		c.Close()
		return false
	case ok && r.Code >= 400:
		return refuse(r.smtpError(), ByRule)
	}
	if l, limited := st.limits.take(s.now(), StageGreeting, ip, "", ip); limited {
		return refuse(l.smtpError(), ByRateLimit)
	}
	seen := s.seenAt(StageGreeting, ip)
	seen.Conns = s.tl.openFrom(ip)
	e, by, open := s.askPersonas(st, seen)
	switch {
	case !open:
		c.Close()
		return false
	case e != nil:
		return refuse(e, by)
	}
	s.record(Event{Client: client, Stage: StageGreeting, Reply: fmt.Sprintf("220 %s ESMTP Service Ready", s.hostname)})
	return true
}

// replyDropped is the Event.Reply of a connection closed without a reply.
const replyDropped = "(dropped)"

// writeReplyAndClose writes one reply line and closes c: the greeting's
// refusal, before go-smtp has written anything to c.
func writeReplyAndClose(c net.Conn, e *smtp.SMTPError) {
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, replyLine(e)+"\r\n")
	c.Close()
}

// hostOf returns the host part of "host:port", or addr if it has none.
func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}
