package httpsubmit

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/relayq/relayq/internal/clock"
	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/submission"
)

// Path is where messages are posted.
const Path = "/api/v1/messages"

// Options configure a Server.
type Options struct {
	// Acceptor is the submission server's entry point (required).
	Acceptor submission.Acceptor
	Logger   *slog.Logger
	// Clock is the clock for Date headers; default clock.Real.
	Clock clock.Clock
	// UploadTimeout bounds reading one request (default 10m, like DATA).
	UploadTimeout time.Duration
	// Proxy, if set, wraps the raw listener below the connection limits
	// and TLS, as submission.Options.Proxy does for SMTP.
	Proxy submission.ListenerWrap
	// SESKeys are the access keys SES's endpoint takes (SigV4).
	SESKeys []SESKey
}

// Server serves the HTTP submission API.
type Server struct {
	acc     submission.Acceptor
	log     *slog.Logger
	clock   clock.Clock
	timeout time.Duration
	proxy   submission.ListenerWrap
	http    *http.Server
	closing atomic.Bool
}

// New builds a Server.
func New(o Options) *Server {
	s := &Server{acc: o.Acceptor, log: o.Logger, clock: o.Clock, timeout: o.UploadTimeout, proxy: o.Proxy}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.clock == nil {
		s.clock = clock.Real
	}
	if s.timeout <= 0 {
		s.timeout = 10 * time.Minute
	}
	mux := http.NewServeMux()
	mux.HandleFunc(Path, s.handle)
	// The hosted APIs an application may already speak (esp.go).
	s.mountESP(mux, postmarkAPI{}, append([]string{PostmarkPath, PostmarkBatchPath}, postmarkTemplatePaths...)...)
	s.mountESP(mux, resendAPI{}, ResendPath, ResendBatchPath)
	s.mountESP(mux, sendgridAPI{}, SendGridPath)
	sk := sesAPI{keys: map[string]SESKey{}}
	for _, k := range o.SESKeys {
		sk.keys[k.AccessKeyID] = k
	}
	s.mountESP(mux, sk, SESPath)
	mux.HandleFunc("GET "+Path+"/{id}", s.message) // read.go
	mux.HandleFunc("GET /api/v1/events", s.events)
	s.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 30 * time.Second,
		ReadTimeout:       s.timeout,
		WriteTimeout:      s.timeout + time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	return s
}

// Handler is the API's handler, for tests and for mounting elsewhere.
func (s *Server) Handler() http.Handler { return s.http.Handler }

// Listen opens addr (HTTPS when the submission server has a certificate)
// and serves in the background; it returns the bound address.
func (s *Server) Listen(addr string) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("httpsubmit: listen %s: %w", addr, err)
	}
	// The connection, not the request, holds the slot: an idle keep-alive
	// connection costs a descriptor and a goroutine all the same. Below
	// TLS, so a refused client costs no handshake; the PROXY header below
	// both, so that the limits count the client.
	if s.proxy != nil {
		l = s.proxy(l, "")
	}
	l = s.acc.LimitListener(l)
	scheme := "http"
	if c := s.acc.TLSConfig(); c != nil {
		l = tls.NewListener(l, c)
		scheme = "https"
	}
	go func() {
		if err := s.http.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("HTTP submission listener stopped", "addr", addr, "err", err)
		}
	}()
	s.log.Info("listening for HTTP submissions", "addr", l.Addr().String(), "scheme", scheme)
	return l.Addr(), nil
}

// Shutdown refuses new requests with 503, lets requests in progress get
// their answer (a 202 only after the fsync), and waits until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.http.SetKeepAlivesEnabled(false)
	err := s.http.Shutdown(ctx)
	if err != nil {
		s.http.Close()
	}
	return err
}

// Close stops at once.
func (s *Server) Close() error { return s.http.Close() }

// recipientResult is one recipient's outcome in a response.
type recipientResult struct {
	Address string `json:"address"`
	Status  string `json:"status"` // "queued" or "refused"
	Reply   string `json:"reply"`
}

// accepted is the 202 body.
type accepted struct {
	QueueID    string            `json:"queue_id"`
	MessageID  string            `json:"message_id"`
	Recipients []recipientResult `json:"recipients"`
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, apiError{Error: "use POST", Code: "5.5.1"})
		return
	}
	if s.closing.Load() {
		w.Header().Set("Connection", "close")
		writeRefusal(w, errShuttingDown)
		return
	}
	ip := remoteIP(r)
	c, e := s.authenticate(r, ip)
	if e != nil {
		writeRefusal(w, e)
		return
	}
	if !s.acc.MayRelay(c) {
		// No credentials from an untrusted address: the same refusal SMTP
		// gives at MAIL, counted the same way.
		writeRefusal(w, s.acc.Refuse(c, submission.RejectRelay, submission.ErrAuthRequired))
		return
	}
	k, done := s.begin(w, r, c) // Idempotency-Key (idempotency.go)
	if done {
		return
	}
	defer k.end()
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var sub *submitted
	switch {
	case err != nil:
		writeError(w, http.StatusUnsupportedMediaType, apiError{Error: "Content-Type must be message/rfc822 or application/json", Code: "5.6.0"})
		return
	case ct == "message/rfc822":
		br := getRawReader()
		defer putRawReader(br) // after submit: the body reads through br until stored
		sub, e = s.readRaw(w, r, br)
	case ct == "application/json":
		sub, e = s.readJSON(w, r)
	default:
		writeError(w, http.StatusUnsupportedMediaType, apiError{Error: "Content-Type must be message/rfc822 or application/json", Code: "5.6.0"})
		return
	}
	if e != nil {
		writeRefusal(w, s.acc.Refuse(c, refusalReason(e), e))
		return
	}
	s.submit(w, r, c, sub, k)
}

// refusalReason is the metrics reason for a refusal made while parsing.
func refusalReason(e *smtp.SMTPError) submission.RejectReason {
	if statusFor(e) == http.StatusRequestEntityTooLarge {
		return submission.RejectSize
	}
	return submission.RejectSyntax
}

// submitted is a parsed request: envelope and the message to store.
type submitted struct {
	from      string
	to        []string
	messageID string
	body      interface{ Read([]byte) (int, error) }
	hold      submission.Hold // send_at
}

// submit checks the envelope with the acceptor and stores the message.
func (s *Server) submit(w http.ResponseWriter, r *http.Request, c submission.Client, sub *submitted, k *keyed) {
	if err := s.acc.CheckSender(c, sub.from); err != nil {
		writeRefusal(w, asSMTP(err))
		return
	}
	if err := s.acc.CheckHold(c, sub.hold); err != nil {
		writeRefusal(w, asSMTP(err))
		return
	}
	t := submission.Transaction{From: sub.from, Hold: sub.hold}
	results := make([]recipientResult, 0, len(sub.to))
	for _, to := range sub.to {
		if err := s.acc.CheckRecipientFrom(c, t.From, to, len(t.Recipients)); err != nil {
			results = append(results, recipientResult{Address: to, Status: "refused", Reply: reply(asSMTP(err))})
			continue
		}
		t.Recipients = append(t.Recipients, queueRecipient(to))
		results = append(results, recipientResult{Address: to, Status: "queued", Reply: "250 2.1.5 Ok"})
		t.UTF8 = t.UTF8 || !isASCII(to)
	}
	t.UTF8 = t.UTF8 || !isASCII(sub.from)
	if len(t.Recipients) == 0 {
		writeError(w, http.StatusUnprocessableEntity, apiError{Error: "every recipient was refused", Code: "5.1.0", Recipients: results})
		return
	}
	limit := s.acc.MaxMessageBytes()
	t.Idem = k.transaction(limit, func(id string) []byte {
		return encodeJSON(accepted{QueueID: id, MessageID: sub.messageID, Recipients: results})
	})
	env, err := s.acc.Accept(r.Context(), c, t, sub.body)
	if k.replayed(w, err, limit) {
		return
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeRefusal(w, s.acc.Refuse(c, submission.RejectSize, submission.ErrTooBig))
			return
		}
		if se := asSMTP(err); se != nil {
			writeRefusal(w, se)
			return
		}
		s.log.Info("HTTP submission aborted", "client", c.IP.String(), "err", err)
		writeError(w, http.StatusBadRequest, apiError{Error: "request body could not be read", Code: "4.4.2"})
		return
	}
	writeEncoded(w, http.StatusAccepted, encodeJSON(accepted{QueueID: env.ID, MessageID: sub.messageID, Recipients: results}))
}

func asSMTP(err error) *smtp.SMTPError {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return se
	}
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func remoteIP(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
