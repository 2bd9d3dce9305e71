package smtpclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/relayq/relayq/crlf"
	"github.com/relayq/relayq/smtpcodes"
)

// Outbound TLS policies for MX and route hops (Dialer.TLS).
const (
	// TLSOpportunistic uses STARTTLS when offered and plaintext otherwise
	// (RFC 7435). The certificate is not verified: MX certificates are
	// rarely valid for the MX name, and encryption without authentication
	// still beats cleartext. A failed handshake is transient (no fallback to
	// plaintext on the same host, which an attacker could force).
	TLSOpportunistic = "opportunistic"
	// TLSRequired refuses to deliver without STARTTLS (4.7.10, transient)
	// and verifies the certificate against Dialer.RootCAs and the hop name.
	TLSRequired = "required"
	// TLSNone never starts TLS.
	TLSNone = "none"
)

// Defaults for the Dialer's timeouts, as RFC 5321 section 4.5.3.2 suggests
// for commands (5 minutes) and a usual connect timeout.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultCommandTimeout = 5 * time.Minute
)

// Dialer makes delivery attempts: one SMTP transaction for one message to the
// first of a list of hops that will take it. The zero value is usable.
type Dialer struct {
	// Hostname is our EHLO name; "" means os.Hostname.
	Hostname string
	// TLS is the policy for MX and route hops: TLSOpportunistic (""),
	// TLSRequired or TLSNone. Smarthost hops follow Smarthost.TLS instead.
	TLS string
	// RootCAs verifies certificates; nil means the system pool.
	RootCAs *x509.CertPool
	// ConnectTimeout bounds the TCP connect (and an implicit TLS
	// handshake); 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// CommandTimeout bounds every command's reply, every write of the body
	// (refreshed per write, so a large body only needs to make progress)
	// and the reply to the final dot; 0 means DefaultCommandTimeout.
	CommandTimeout time.Duration
	// Smarthost supplies TLS mode and credentials for hops marked
	// Hop.Smarthost; nil means those hops are treated like routes.
	Smarthost *Smarthost
	// Resolver resolves hop host names at dial time; nil means the system
	// resolver. Router.Resolver gives one that uses the configured DNS.
	Resolver *net.Resolver

	poolOnce sync.Once
	pool     *connPool
}

// Envelope is the part of a queued message a delivery attempt needs.
type Envelope struct {
	// From is the reverse path; "" is the null sender.
	From string
	// RET and EnvID are the RFC 3461 parameters, passed on only to servers
	// that advertise DSN. EnvID is in decoded form (not xtext).
	RET, EnvID string
	// SMTPUTF8 is what the submitting client declared; it is passed on when
	// the server supports it.
	SMTPUTF8 bool
	// Body is "7BIT", "8BITMIME" or "" as declared at submission.
	// Informational: go-smtp adds BODY=8BITMIME whenever the server offers it.
	Body string
	// Size is the stored body's length in bytes, 0 if unknown. It is sent
	// as SIZE= and checked against the server's SIZE limit (RFC 1870).
	Size int64
	// Recipients are the recipients to try in this transaction.
	Recipients []RcptReq
}

// RcptReq is one recipient to deliver to.
type RcptReq struct {
	// Address is the forward path.
	Address string
	// ORCPT is "rfc822;addr" or "utf-8;addr" with addr decoded; passed on
	// to servers that advertise DSN.
	ORCPT string
	// Notify is the RFC 3461 NOTIFY list; an invalid list is not sent.
	Notify []string
}

// RcptResult is the outcome of one attempt for one recipient.
type RcptResult struct {
	Address string
	// Reply is the server's reply, or one synthesized from a local error;
	// its Class says delivered, retry or bounce.
	Reply smtpcodes.Reply
	// RemoteMTA is the host of the hop that gave Reply ("" if none was
	// reached before the failure, e.g. no hops at all).
	RemoteMTA string
}

// Deliver tries hops in order and returns one result per env.Recipients
// entry, in the same order.
//
// A hop that fails before the server has accepted MAIL (connect, greeting,
// EHLO, STARTTLS, AUTH, a 4xx MAIL) is skipped for the next one: failover,
// RFC 5321 section 5.1. Once MAIL is accepted, or the server refuses the
// sender permanently, that hop's per-recipient replies are final for this
// attempt, so a message never reaches two hops in one attempt. When every
// hop fails, all recipients get the last transient failure (or, if every
// hop failed permanently, the last failure).
//
// body is opened only when at least one recipient was accepted. Cancelling
// ctx closes the connection; every recipient then gets a transient 4.4.2.
func (d *Dialer) Deliver(ctx context.Context, hops []Hop, env Envelope, body func() (io.ReadCloser, error)) []RcptResult {
	results := make([]RcptResult, len(env.Recipients))
	for i, r := range env.Recipients {
		results[i].Address = r.Address
	}
	if len(results) == 0 {
		return results
	}
	var failure RcptResult
	tried := false
	for _, hop := range hops {
		if ctx.Err() != nil {
			break
		}
		if s := d.cache().take(poolKey(hop)); s != nil {
			// A cached connection may have been closed by the server in
			// the meantime; if MAIL fails on it, a fresh one is tried.
			s.attach(ctx)
			if _, final := s.again(env, body, results); final {
				return results
			}
		}
		s := &session{d: d, ctx: ctx, hop: hop}
		reply, final := s.run(env, body, results)
		if final {
			return results
		}
		if !tried || reply.Class == smtpcodes.Transient || failure.Reply.Class != smtpcodes.Transient {
			failure = RcptResult{Reply: reply, RemoteMTA: hop.Host}
		}
		tried = true
	}
	if !tried {
		err := smtpcodes.Transientf("4.4.4", "delivery: no next hop to try")
		if ctx.Err() != nil {
			err = smtpcodes.Transientf("4.4.2", "delivery: attempt abandoned: %v", ctx.Err())
		}
		failure = RcptResult{Reply: smtpcodes.Classify(smtpcodes.StageConnect, err)}
	}
	for i := range results {
		results[i].Reply, results[i].RemoteMTA = failure.Reply, failure.RemoteMTA
	}
	return results
}

func (d *Dialer) connectTimeout() time.Duration {
	if d.ConnectTimeout > 0 {
		return d.ConnectTimeout
	}
	return DefaultConnectTimeout
}

func (d *Dialer) commandTimeout() time.Duration {
	if d.CommandTimeout > 0 {
		return d.CommandTimeout
	}
	return DefaultCommandTimeout
}

func (d *Dialer) hostname() string {
	if d.Hostname != "" {
		return d.Hostname
	}
	if h, err := os.Hostname(); err == nil && h != "" && !strings.ContainsAny(h, "\r\n ") {
		return h
	}
	return "localhost"
}

// tlsMode is how one session secures its connection.
type tlsMode struct {
	starttls string // TLSOpportunistic, TLSRequired or TLSNone before the greeting
	implicit bool   // TLS from the first byte
	verify   bool   // verify the certificate chain and name
	auth     *Smarthost
}

// policy decides TLS and AUTH for hop. Smarthost hops always verify: we send
// a password there, and a man in the middle must not get it.
func (d *Dialer) policy(hop Hop) tlsMode {
	if hop.Smarthost && d.Smarthost != nil {
		sh := d.Smarthost
		m := tlsMode{starttls: TLSRequired, verify: true, auth: sh, implicit: hop.ImplicitTLS}
		switch strings.ToLower(sh.TLS) {
		case "none":
			m.starttls = TLSNone
		case "implicit":
			m.implicit = true
		}
		if m.implicit {
			m.starttls = TLSNone
		}
		return m
	}
	m := tlsMode{starttls: TLSOpportunistic, implicit: hop.ImplicitTLS}
	switch strings.ToLower(d.TLS) {
	case TLSRequired:
		m.starttls, m.verify = TLSRequired, true
	case TLSNone:
		m.starttls = TLSNone
	}
	if m.implicit {
		m.starttls = TLSNone
	}
	return m
}

// session is one connection to one hop.
type session struct {
	d    *Dialer
	ctx  context.Context
	hop  Hop
	mode tlsMode

	raw  net.Conn    // the TCP connection, closed when ctx ends
	conn net.Conn    // raw, or the TLS connection over it
	w    *wire       // the SMTP conversation on conn; nil before the greeting
	stop func() bool // ends the ctx watch that closes raw

	// reusable is set when a transaction ended cleanly and the server is
	// ready for the next MAIL; uses counts transactions on the connection.
	reusable  bool
	uses      int
	idleTimer *time.Timer
}

// run makes one attempt on s.hop. final reports whether results were filled
// in (the attempt is over); otherwise reply says why the hop failed.
func (s *session) run(env Envelope, body func() (io.ReadCloser, error), results []RcptResult) (reply smtpcodes.Reply, final bool) {
	s.mode = s.d.policy(s.hop)
	defer s.finish()
	if stage, err := s.open(); err != nil {
		var local *smtpcodes.StatusError
		if s.w != nil && s.ctx.Err() == nil && (isServerReply(err) || errors.As(err, &local)) {
			s.w.quit() // the connection still works: say goodbye
		}
		return s.classify(stage, err), false
	}
	return s.transact(env, body, results)
}

// finish caches the connection for the next message when the transaction
// ended cleanly, and closes it otherwise.
func (s *session) finish() {
	if s.reusable && s.ctx.Err() == nil && s.stop != nil && s.stop() {
		s.stop = nil
		s.reusable = false
		s.d.cache().put(poolKey(s.hop), s)
		return
	}
	s.close()
}

// again runs a transaction on a cached, already open session.
func (s *session) again(env Envelope, body func() (io.ReadCloser, error), results []RcptResult) (smtpcodes.Reply, bool) {
	defer s.finish()
	return s.transact(env, body, results)
}

// cache returns the Dialer's connection cache.
func (d *Dialer) cache() *connPool {
	d.poolOnce.Do(func() { d.pool = &connPool{} })
	return d.pool
}

// Close quits the cached connections; sessions that finish later are
// closed instead of cached. Deliveries still work, one connection each.
func (d *Dialer) Close() { d.cache().close() }

// close releases the connection.
func (s *session) close() {
	if s.stop != nil {
		s.stop()
	}
	if s.conn != nil {
		_ = s.conn.Close()
	}
	if s.raw != nil {
		_ = s.raw.Close()
	}
}

// classify turns an error at stage into a reply, reporting a cancelled
// attempt as such rather than as whatever the closed socket said.
func (s *session) classify(stage smtpcodes.Stage, err error) smtpcodes.Reply {
	if s.ctx.Err() != nil {
		err = smtpcodes.Transientf("4.4.2", "delivery: attempt to %s abandoned: %v", s.hop.Addr(), s.ctx.Err())
	}
	return smtpcodes.Classify(stage, err)
}

// deadline arms the command timeout for the next read or write.
func (s *session) deadline() {
	_ = s.conn.SetDeadline(time.Now().Add(s.d.commandTimeout()))
}

// open connects, reads the greeting, secures the connection as the policy
// says and authenticates to a smarthost. The stage says where it failed.
func (s *session) open() (smtpcodes.Stage, error) {
	dialer := net.Dialer{Timeout: s.d.connectTimeout(), Resolver: s.d.Resolver}
	raw, err := dialer.DialContext(s.ctx, "tcp", s.hop.Addr())
	if err != nil {
		return smtpcodes.StageConnect, fmt.Errorf("delivery: connect to %s: %w", s.hop.Addr(), err)
	}
	s.raw, s.conn = raw, raw
	// Cancelling ctx closes the socket, which unblocks any read or write:
	// shutdown can abandon an attempt without waiting for a timeout.
	s.stop = context.AfterFunc(s.ctx, func() { _ = raw.Close() })

	if s.mode.implicit {
		_ = raw.SetDeadline(time.Now().Add(s.d.connectTimeout()))
		if err := s.handshake(); err != nil {
			return smtpcodes.StageStartTLS, err
		}
	}

	s.w = newWire(s.conn, s.d.commandTimeout())
	if code, text, err := s.w.reply(); err != nil || code != 220 {
		if err == nil {
			err = serverReply(code, text)
		}
		return smtpcodes.StageGreeting, err
	}
	if err := s.w.hello(s.d.hostname()); err != nil {
		return smtpcodes.StageHello, err
	}
	if s.mode.starttls != TLSNone {
		if stage, err := s.startTLS(); err != nil {
			return stage, err
		}
	}
	return s.auth()
}

// startTLS sends STARTTLS when the server offers it and says EHLO again over
// TLS (RFC 3207 section 4.2). Without STARTTLS on offer, opportunistic mode
// goes on in plaintext; required mode fails.
func (s *session) startTLS() (smtpcodes.Stage, error) {
	if !s.w.has("STARTTLS") {
		if s.mode.starttls == TLSRequired {
			return smtpcodes.StageStartTLS, smtpcodes.Transientf("4.7.10",
				"delivery: %s does not offer STARTTLS and TLS is required", s.hop.Addr())
		}
		return "", nil
	}
	if _, _, err := s.w.cmd(2, "STARTTLS"); err != nil {
		return smtpcodes.StageStartTLS, err
	}
	if s.w.r.Buffered() > 0 {
		// Plaintext sent after the 220 would be taken as coming over TLS:
		// the command injection of RFC 3207 section 5 (CVE-2011-0411).
		return smtpcodes.StageStartTLS, smtpcodes.Transientf("4.7.5",
			"delivery: %s sent data after its STARTTLS reply", s.hop.Addr())
	}
	if err := s.handshake(); err != nil {
		return smtpcodes.StageStartTLS, err
	}
	s.w = newWire(s.conn, s.d.commandTimeout())
	if err := s.w.hello(s.d.hostname()); err != nil {
		return smtpcodes.StageHello, err
	}
	return "", nil
}

// handshake starts TLS on the raw connection, bounded by the deadline
// already set and by ctx.
func (s *session) handshake() error {
	cfg := &tls.Config{
		ServerName:         s.hop.Host,
		MinVersion:         tls.VersionTLS12,
		RootCAs:            s.d.RootCAs,
		InsecureSkipVerify: !s.mode.verify, // opportunistic only, see TLSOpportunistic
	}
	tc := tls.Client(s.raw, cfg)
	if !s.mode.implicit {
		s.deadline()
	}
	if err := tc.HandshakeContext(s.ctx); err != nil {
		return fmt.Errorf("delivery: TLS with %s: %w", s.hop.Addr(), err)
	}
	s.conn = tc
	return nil
}

// auth authenticates to a smarthost, never sending the password in clear
// unless the operator allowed it: the mail waits (4.7.11, RFC 4954 section
// 6) instead, so that fixing TLS releases it.
func (s *session) auth() (smtpcodes.Stage, error) {
	sh := s.mode.auth
	if sh == nil || sh.Username == "" {
		return "", nil
	}
	if _, secure := s.conn.(*tls.Conn); !secure && !sh.AllowInsecureAuth {
		return smtpcodes.StageAuth, smtpcodes.Transientf("4.7.11",
			"delivery: not sending smarthost credentials to %s without TLS (allow_insecure_auth is off)", s.hop.Addr())
	}
	var client sasl.Client
	switch {
	case s.w.supportsAuth(sasl.Plain):
		client = sasl.NewPlainClient("", sh.Username, sh.Password)
	case s.w.supportsAuth(sasl.Login):
		client = newLoginClient(sh.Username, sh.Password)
	default:
		return smtpcodes.StageAuth, smtpcodes.Transientf("4.7.0",
			"delivery: smarthost %s offers no AUTH PLAIN or LOGIN (AUTH %q)", s.hop.Addr(), s.w.ext["AUTH"])
	}
	if err := s.w.auth(client); err != nil {
		return smtpcodes.StageAuth, err
	}
	return "", nil
}

// transact runs MAIL, RCPT and DATA, pipelined in one round trip when the
// server offers PIPELINING (RFC 2920). It returns final=false only when the
// server did not accept MAIL for a reason worth trying another hop for.
func (s *session) transact(env Envelope, body func() (io.ReadCloser, error), results []RcptResult) (smtpcodes.Reply, bool) {
	w := s.w
	mta := s.hop.Host
	set := func(i int, r smtpcodes.Reply) { results[i].Reply, results[i].RemoteMTA = r, mta }
	setAll := func(r smtpcodes.Reply) (smtpcodes.Reply, bool) {
		for i := range results {
			set(i, r)
		}
		w.quit()
		return r, true
	}
	// failOpen ends the attempt after a 421 or a lost connection: everyone
	// not already bounced gets r (RFC 5321 section 3.8).
	failOpen := func(r smtpcodes.Reply) (smtpcodes.Reply, bool) {
		for i := range results {
			if results[i].Reply.Class != smtpcodes.Permanent {
				set(i, r)
			}
		}
		return r, true
	}

	hasUTF8, hasDSN := w.has("SMTPUTF8"), w.has("DSN")
	if strings.ContainsAny(env.From, "\r\n") {
		return setAll(smtpcodes.Classify(smtpcodes.StageMail, smtpcodes.Permanentf("5.1.7", "delivery: sender address contains a line break")))
	}
	if !isASCII(env.From) && !hasUTF8 {
		// RFC 6531 section 3.2: a UTF-8 envelope cannot be downgraded here.
		return setAll(smtpcodes.Classify(smtpcodes.StageMail, smtpcodes.Permanentf("5.6.7",
			"delivery: %s does not support SMTPUTF8, needed for sender %s", s.hop.Addr(), env.From)))
	}
	if limit := w.maxSize(); limit > 0 && env.Size > limit {
		return setAll(smtpcodes.Classify(smtpcodes.StageMail, smtpcodes.Permanentf("5.3.4",
			"delivery: message of %d bytes exceeds the %d bytes %s accepts (RFC 1870)", env.Size, limit, s.hop.Addr())))
	}

	// asked are the recipients the server is asked about; the others fail
	// here, without a command.
	var asked []int
	var rcptLines []string
	utf8 := env.SMTPUTF8 || !isASCII(env.From)
	for i, rq := range env.Recipients {
		switch {
		case strings.ContainsAny(rq.Address, "\r\n"):
			set(i, smtpcodes.Classify(smtpcodes.StageRcpt, smtpcodes.Permanentf("5.1.3", "delivery: recipient address contains a line break")))
		case !isASCII(rq.Address) && !hasUTF8:
			set(i, smtpcodes.Classify(smtpcodes.StageRcpt, smtpcodes.Permanentf("5.6.7",
				"delivery: %s does not support SMTPUTF8, needed for recipient %s", s.hop.Addr(), rq.Address)))
		default:
			asked = append(asked, i)
			rcptLines = append(rcptLines, rcptCommand(rq, hasDSN, hasUTF8))
			utf8 = utf8 || !isASCII(rq.Address)
		}
	}
	if len(asked) == 0 {
		s.reusable = true // nothing was said: the connection is as it was
		return smtpcodes.Reply{}, true
	}

	// A group larger than maxPipelined waits for each reply instead: RFC
	// 2920 section 3.1 warns that a client writing more than the TCP
	// windows hold while the server's replies pile up can deadlock both.
	pipelined := w.has("PIPELINING") && len(rcptLines) <= maxPipelined
	w.queue(mailCommand(env, w, utf8 && hasUTF8, hasDSN))
	if pipelined {
		for _, l := range rcptLines {
			w.queue(l)
		}
		w.queue("DATA")
	}
	if err := w.flush(); err != nil {
		return s.classify(smtpcodes.StageMail, err), false
	}
	if _, _, err := w.expect(2); err != nil {
		r := s.classify(smtpcodes.StageMail, err)
		if isServerReply(err) && pipelined && !r.SuspendsDestination() {
			w.drain(len(rcptLines) + 1) // the RCPTs' and DATA's replies
		}
		if r.Class == smtpcodes.Permanent {
			return setAll(r)
		}
		if isServerReply(err) {
			w.quit()
		}
		return r, false
	}

	var accepted []int
	for k, i := range asked {
		var err error
		if pipelined {
			_, _, err = w.expect(2)
		} else {
			_, _, err = w.cmd(2, rcptLines[k])
		}
		if err == nil {
			accepted = append(accepted, i)
			continue
		}
		r := s.classify(smtpcodes.StageRcpt, err)
		if !isServerReply(err) || r.SuspendsDestination() {
			return failOpen(r)
		}
		set(i, r)
	}
	// dataErr is the reply to a pipelined DATA, read here to stay in step.
	var dataErr error
	if pipelined {
		if _, _, dataErr = w.expect(3); dataErr != nil && !isServerReply(dataErr) {
			return failOpen(s.classify(smtpcodes.StageData, dataErr))
		}
	}
	if len(accepted) == 0 {
		if pipelined && dataErr == nil {
			// DATA was taken with no recipient: end it with a lone dot
			// (RFC 2920 section 3.1); the server has nobody to deliver to.
			_, _, _ = w.cmd(0, ".")
		}
		if _, _, err := w.cmd(2, "RSET"); err == nil {
			s.uses++
			s.reusable = true
		} else {
			w.quit()
		}
		return smtpcodes.Reply{}, true
	}
	setAccepted := func(r smtpcodes.Reply) {
		for _, i := range accepted {
			set(i, r)
		}
	}
	// dataFailed ends the attempt when the server refuses DATA or the
	// message: its reply applies to every recipient it accepted.
	dataFailed := func(err error) (smtpcodes.Reply, bool) {
		r := s.classify(smtpcodes.StageData, err)
		if !isServerReply(err) || r.SuspendsDestination() {
			return failOpen(r)
		}
		setAccepted(r)
		w.quit()
		return r, true
	}

	if dataErr != nil {
		return dataFailed(dataErr)
	}
	rc, err := body()
	if err != nil {
		setAccepted(smtpcodes.Classify(smtpcodes.StageData, smtpcodes.Transientf("4.3.0", "delivery: open queued body: %v", err)))
		if pipelined {
			// The server took DATA and waits for content we cannot send;
			// only closing aborts it (RFC 5321 section 4.1.1.4).
			_ = s.raw.Close()
		} else {
			_, _, _ = w.cmd(0, "RSET")
			w.quit()
		}
		return smtpcodes.Reply{}, true
	}
	defer rc.Close()
	if !pipelined {
		if _, _, err := w.cmd(3, "DATA"); err != nil {
			return dataFailed(err)
		}
	}

	dw := &dataWriter{wire: w}
	src := &trackedReader{r: rc}
	dst := crlf.NewWriter(dw)
	buf := copyBuffers.Get().(*[]byte)
	_, err = io.CopyBuffer(dst, src, *buf)
	copyBuffers.Put(buf)
	if err == nil {
		err = dst.Flush()
	}
	if src.err != nil {
		// Without the final dot the server discards what it got; closing
		// is the only way to abort DATA (RFC 5321 section 4.1.1.4).
		_ = s.raw.Close()
		r := smtpcodes.Classify(smtpcodes.StageData, smtpcodes.Transientf("4.3.0", "delivery: read queued body: %v", src.err))
		setAccepted(r)
		return r, true
	}
	if err == nil {
		err = dw.close()
	}
	if err == nil {
		err = w.flush()
	}
	if err != nil {
		return failOpen(s.classify(smtpcodes.StageData, err))
	}
	code, text, err := w.expect(2)
	if err != nil {
		return dataFailed(err)
	}
	r := smtpcodes.Classify(smtpcodes.StageData, serverReply(code, text))
	setAccepted(r)
	s.uses++
	s.reusable = true // QUIT is sent when the cached connection is closed
	return r, true
}

// mailCommand is the MAIL command for env with the parameters the server
// offers (RFC 1652, RFC 1870, RFC 6531, RFC 3461 section 4.3 and 4.4).
func mailCommand(env Envelope, w *wire, utf8, dsn bool) string {
	var b strings.Builder
	b.WriteString("MAIL FROM:<")
	b.WriteString(env.From)
	b.WriteByte('>')
	if w.has("8BITMIME") {
		b.WriteString(" BODY=8BITMIME")
	}
	if w.has("SIZE") && env.Size > 0 {
		b.WriteString(" SIZE=")
		b.WriteString(strconv.FormatInt(env.Size, 10))
	}
	if utf8 {
		b.WriteString(" SMTPUTF8")
	}
	if dsn {
		if ret := strings.ToUpper(env.RET); ret == "FULL" || ret == "HDRS" {
			b.WriteString(" RET=" + ret)
		}
		if env.EnvID != "" && isPrintableASCII(env.EnvID) {
			b.WriteString(" ENVID=" + xtext(env.EnvID))
		}
	}
	return b.String()
}

// rcptCommand is the RCPT command for rq, with its DSN parameters when the
// server takes them (RFC 3461 section 4.1 and 4.2). A NOTIFY or ORCPT the
// server would refuse as malformed is left out rather than failing the
// recipient.
func rcptCommand(rq RcptReq, dsn, utf8 bool) string {
	line := "RCPT TO:<" + rq.Address + ">"
	if !dsn {
		return line
	}
	seen := map[string]bool{}
	valid := len(rq.Notify) > 0
	var notify []string
	for _, n := range rq.Notify {
		v := strings.ToUpper(strings.TrimSpace(n))
		switch v {
		case "NEVER", "DELAY", "FAILURE", "SUCCESS":
		default:
			valid = false
		}
		if seen[v] {
			valid = false
		}
		seen[v] = true
		notify = append(notify, v)
	}
	// RFC 3461 section 4.1: NEVER stands alone.
	if valid && !(seen["NEVER"] && len(seen) > 1) {
		line += " NOTIFY=" + strings.Join(notify, ",")
	}
	if typ, addr, ok := strings.Cut(rq.ORCPT, ";"); ok && addr != "" && !strings.ContainsAny(addr, "\r\n") {
		switch {
		case strings.EqualFold(typ, "rfc822") && isPrintableASCII(addr):
			line += " ORCPT=rfc822;" + xtext(addr)
		case strings.EqualFold(typ, "rfc822"), strings.EqualFold(typ, "utf-8"):
			line += " ORCPT=utf-8;" + utf8AddrXtext(addr, utf8)
		}
	}
	return line
}

// isServerReply reports whether err is a reply the server sent, as opposed
// to a broken or timed-out connection, after which nothing more can be said.
func isServerReply(err error) bool { return replyCode(err) != 0 }

// serverReply builds an *smtp.SMTPError from a code and reply text, taking a
// leading RFC 3463 enhanced code as go-smtp's client does.
func serverReply(code int, msg string) *smtp.SMTPError {
	e := &smtp.SMTPError{Code: code, Message: msg}
	first, rest, ok := strings.Cut(msg, " ")
	parts := strings.Split(first, ".")
	if !ok || len(parts) != 3 {
		return e
	}
	var ec smtp.EnhancedCode
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return e
		}
		ec[i] = n
	}
	e.EnhancedCode = ec
	e.Message = strings.ReplaceAll(rest, "\n"+first+" ", "\n")
	return e
}

// trackedReader remembers a read error so that a failing disk is told
// apart from a failing network after io.Copy.
type trackedReader struct {
	r   io.Reader
	err error
}

func (t *trackedReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		t.err = err
	}
	return n, err
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// isPrintableASCII is RFC 3461's condition for ENVID and rfc822 ORCPT.
func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// copyBuffers are reused for message bodies: io.Copy would allocate 32 KiB
// per message, a large share of the garbage at thousands of messages a second.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
