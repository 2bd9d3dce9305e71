package sendmail

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/user"
	"strings"

	"github.com/emersion/go-message/mail"

	"github.com/relayq/relayq/internal/clock"
	smtp "github.com/relayq/relayq/internal/gosmtp"
	"github.com/relayq/relayq/internal/rawmsg"
)

// Exit statuses from sysexits.h.
const (
	ExOK       = 0
	ExUsage    = 64 // EX_USAGE: bad command line
	ExDataErr  = 65 // EX_DATAERR: the message was refused or malformed
	ExNoUser   = 67 // EX_NOUSER: a recipient was refused
	ExSoftware = 70 // EX_SOFTWARE: an internal error
	ExTempFail = 75 // EX_TEMPFAIL: try again later (relay down, 4xx)
	ExConfig   = 78 // EX_CONFIG: the configuration cannot be read
)

// DefaultConfig is where the relay's configuration is looked for.
const DefaultConfig = "/etc/relayq/relayq.yaml"

// RelayConfig is what the command needs from the relay's configuration.
type RelayConfig struct {
	// Server is host:port of a submission listener.
	Server string
	// Hostname is the relay's name, for added From and Message-ID.
	Hostname string
}

// Env is the command's world, replaced in tests.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// LoadConfig reads the relay configuration; "" means the embedded defaults.
	LoadConfig func(path string) (RelayConfig, error)
	// QueueList prints the queue for -bp, asking the relay that the
	// configuration file (-C; "" for the default) names; nil makes -bp
	// unsupported.
	QueueList func(out io.Writer, config string) error
	Getenv    func(string) string
	Clock     clock.Clock
	// Login is the calling user's login name.
	Login func() string
}

// maxHeader bounds the header block read into memory.
const maxHeader = 1 << 20

// Run is the whole command; it returns the exit status.
func Run(args []string, env Env) int {
	env.fill()
	o, err := Parse(args)
	if err == nil {
		err = checkAddressArgs(o)
	}
	if err != nil {
		return fail(env, ExUsage, err)
	}
	switch o.Mode {
	case ModeNoop:
		return ExOK
	case ModeQueueList:
		if env.QueueList == nil {
			return fail(env, ExUsage, errors.New("-bp is not available"))
		}
		if err := env.QueueList(env.Stdout, o.Config); err != nil {
			return fail(env, ExTempFail, err)
		}
		return ExOK
	}
	rc, err := relayConfig(o, env)
	if err != nil {
		return fail(env, ExConfig, err)
	}
	cr := credentials{Username: env.Getenv("RELAYQ_SENDMAIL_USERNAME"), Password: env.Getenv("RELAYQ_SENDMAIL_PASSWORD")}
	if o.Mode == ModeSMTP {
		return serveSMTP(env, rc, cr)
	}
	m, code, err := prepare(o, env, rc)
	if err != nil {
		return fail(env, code, err)
	}
	id, code, err := submit(rc.Server, rc.Hostname, cr, m)
	if err != nil {
		return fail(env, code, err)
	}
	if o.Verbose {
		fmt.Fprintf(env.Stderr, "sendmail: queued as %s by %s\n", id, rc.Server)
	}
	return ExOK
}

// checkAddressArgs refuses a line break in -f or a recipient argument: an
// SMTP command is one line (RFC 5321 section 2.3.8), so such an address can
// never be sent, and it is the caller's mistake (EX_USAGE), not a relay to
// retry later.
func checkAddressArgs(o Options) error {
	for _, a := range append([]string{o.From}, o.Recipients...) {
		if strings.ContainsAny(a, "\r\n") {
			return fmt.Errorf("address %q contains a line break", a)
		}
	}
	return nil
}

func (e *Env) fill() {
	if e.Stdin == nil {
		e.Stdin = os.Stdin
	}
	if e.Stdout == nil {
		e.Stdout = os.Stdout
	}
	if e.Stderr == nil {
		e.Stderr = os.Stderr
	}
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	if e.Clock == nil {
		e.Clock = clock.Real
	}
	if e.Login == nil {
		e.Login = loginName
	}
}

func fail(env Env, code int, err error) int {
	fmt.Fprintf(env.Stderr, "sendmail: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	return code
}

func loginName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	for _, v := range []string{"LOGNAME", "USER"} {
		if s := os.Getenv(v); s != "" {
			return s
		}
	}
	return "nobody"
}

// relayConfig finds the server and the relay's hostname. The server is
// --server, then RELAYQ_SENDMAIL_SERVER, then the first submission.listen
// of the configuration file (-C, else /etc/relayq/relayq.yaml when it
// exists, else the built-in defaults); the hostname is RELAYQ_HOSTNAME,
// then the file's hostname, then the system's name. Flags and environment
// win before any file is read: when they give both, no file is opened, and
// when they give the server, a file the caller may not read (a
// configuration kept from other users) leaves only the hostname to the
// system, instead of failing every cron job and web application that is
// not root's.
func relayConfig(o Options, env Env) (RelayConfig, error) {
	rc := RelayConfig{Server: o.Server, Hostname: env.Getenv("RELAYQ_HOSTNAME")}
	if rc.Server == "" {
		rc.Server = env.Getenv("RELAYQ_SENDMAIL_SERVER")
	}
	if (rc.Server == "" || rc.Hostname == "") && env.LoadConfig != nil {
		path := o.Config
		if path == "" {
			if _, err := os.Stat(DefaultConfig); err == nil {
				path = DefaultConfig
			}
		}
		fc, err := env.LoadConfig(path)
		switch {
		case err == nil:
		case rc.Server != "" && errors.Is(err, fs.ErrPermission):
		default:
			return rc, err
		}
		if rc.Server == "" {
			rc.Server = fc.Server
		}
		if rc.Hostname == "" {
			rc.Hostname = fc.Hostname
		}
	}
	if rc.Server == "" {
		return rc, errors.New("no relay to submit to: give --server or set submission.listen")
	}
	rc.Server = dialable(rc.Server)
	if rc.Hostname == "" {
		rc.Hostname, _ = os.Hostname()
	}
	if rc.Hostname == "" {
		rc.Hostname = "localhost"
	}
	return rc, nil
}

// dialable turns a listen address into one to dial: an unspecified host
// (":2525", "0.0.0.0:25", "[::]:25") means this machine.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

// message is what goes to the relay.
type message struct {
	from  string
	rcpts []string
	body  io.Reader
}

// prepare reads the header, completes its bare local parts, works out the
// envelope, removes Bcc and adds a missing From, Date and Message-ID.
func prepare(o Options, env Env, rc RelayConfig) (message, int, error) {
	br := bufio.NewReaderSize(env.Stdin, 32<<10)
	var in io.Reader = br
	if !o.IgnoreDots {
		in = &dotStop{r: br, atLineStart: true}
	}
	hr := bufio.NewReaderSize(in, 32<<10)
	h, err := rawmsg.ReadHeader(hr, maxHeader)
	if err != nil {
		return message{}, ExDataErr, fmt.Errorf("reading the message: %w", err)
	}
	qualifyHeader(h, rc.Hostname)
	m := message{from: o.From}
	if m.from != "<>" {
		m.from = qualify(m.from, rc.Hostname)
	}
	for _, r := range o.Recipients {
		m.rcpts = append(m.rcpts, qualify(r, rc.Hostname))
	}
	if o.ExtractRecipients {
		list, err := headerRecipients(h)
		if err != nil {
			return message{}, ExDataErr, fmt.Errorf("recipients in the header: %w", err)
		}
		m.rcpts = append(m.rcpts, list...)
	}
	if len(m.rcpts) == 0 {
		return message{}, ExUsage, errors.New("no recipients: give them as arguments or use -t")
	}
	h.Remove("Bcc")
	login := env.Login()
	if m.from == "" {
		m.from = login + "@" + rc.Hostname
	}
	if m.from == "<>" {
		m.from = ""
	}
	headerFrom := m.from
	if headerFrom == "" {
		headerFrom = login + "@" + rc.Hostname
	}
	fromField := (&mail.Address{Name: o.FullName, Address: headerFrom}).String()
	if _, err := h.Complete(env.Clock.Now(), rc.Hostname, fromField); err != nil {
		return message{}, ExSoftware, err
	}
	m.body = h.Reader(hr)
	return m, ExOK, nil
}

// dotStop ends the input at a line holding a single "." (traditional
// sendmail; -i turns it off).
type dotStop struct {
	r           *bufio.Reader
	pending     []byte
	atLineStart bool
	done        bool
}

func (d *dotStop) Read(p []byte) (int, error) {
	if len(d.pending) > 0 {
		n := copy(p, d.pending)
		d.pending = d.pending[n:]
		return n, nil
	}
	if d.done {
		return 0, io.EOF
	}
	line, err := d.r.ReadSlice('\n')
	if d.atLineStart && (string(line) == ".\n" || string(line) == ".\r\n" || (err == io.EOF && string(line) == ".")) {
		d.done = true
		return 0, io.EOF
	}
	d.atLineStart = len(line) > 0 && line[len(line)-1] == '\n'
	n := copy(p, line)
	if n < len(line) {
		d.pending = append(d.pending[:0], line[n:]...)
	}
	if errors.Is(err, bufio.ErrBufferFull) || (err == io.EOF && len(d.pending) > 0) {
		err = nil
	}
	if err == io.EOF {
		d.done = true
		if n > 0 {
			err = nil
		}
	}
	return n, err
}

// submit runs one SMTP transaction; all recipients or none.
func submit(server, hostname string, cr credentials, m message) (string, int, error) {
	c, code, err := dialRelay(server, hostname, cr)
	if err != nil {
		return "", code, err
	}
	defer c.Close()
	if err := c.Mail(m.from, nil); err != nil {
		return "", codeFor(err, ExDataErr), fmt.Errorf("relay %s refused sender <%s>: %w", server, m.from, err)
	}
	for _, r := range m.rcpts {
		if err := c.Rcpt(r, nil); err != nil {
			return "", codeFor(err, ExNoUser), fmt.Errorf("relay %s refused recipient <%s>: %w", server, r, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return "", codeFor(err, ExDataErr), fmt.Errorf("relay %s: DATA: %w", server, err)
	}
	if _, err := io.Copy(w, m.body); err != nil {
		return "", codeFor(err, ExTempFail), fmt.Errorf("sending to relay %s: %w", server, err)
	}
	resp, err := w.CloseWithResponse()
	if err != nil {
		return "", codeFor(err, ExDataErr), fmt.Errorf("relay %s refused the message: %w", server, err)
	}
	_ = c.Quit()
	id := resp.StatusText
	if i := strings.LastIndex(id, "queued as "); i >= 0 {
		id = id[i+len("queued as "):]
	}
	return id, ExOK, nil
}

// codeFor is the exit status for an SMTP error: 4xx and anything that is
// not a reply (a broken connection) are temporary; a 5xx gives permanent.
func codeFor(err error, permanent int) int {
	var se *smtp.SMTPError
	if errors.As(err, &se) && se.Code >= 500 {
		return permanent
	}
	return ExTempFail
}
