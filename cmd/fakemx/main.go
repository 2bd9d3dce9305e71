// Command fakemx is a scriptable SMTP server for trying mail clients against
// greylisting, scripted failures, rate limits, slow replies, TLS and AUTH.
// It prints one line per SMTP event, can append accepted messages and
// refused attempts to a JSONL file, and with --http serves an API to assert
// on (and to change the script at run time) and a web page.
// The behaviour lives in package smtptest; this file only wires flags to it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/relayq/relayq/internal/buildinfo"
	"github.com/relayq/relayq/smtptest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// options is the command line, parsed.
type options struct {
	cfg      smtptest.Config
	record   string // JSONL file to append messages and refused attempts to
	certOut  string // where to write the generated certificate
	httpAddr string // where to serve the API and page; "" for nowhere
}

// run parses args, serves until ctx ends and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "expect" {
		return runExpect(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version") {
		fmt.Fprintln(stdout, buildinfo.Get().Line("fakemx"))
		return 0
	}
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "fakemx: %v\n", err)
		return 2
	}
	cfg := opts.cfg
	if opts.record != "" {
		record, err := os.OpenFile(opts.record, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "fakemx: open record file: %v\n", err)
			return 1
		}
		defer record.Close()
		cfg.OnMessage = func(m smtptest.Message) {
			if err := smtptest.WriteRecord(record, m); err != nil {
				fmt.Fprintf(stderr, "fakemx: %v\n", err)
			}
		}
		cfg.OnEvent = func(e smtptest.Event) {
			fmt.Fprintln(stdout, smtptest.FormatEvent(e))
			if e.Refused() {
				if err := smtptest.WriteAttempt(record, e); err != nil {
					fmt.Fprintf(stderr, "fakemx: %v\n", err)
				}
			}
		}
	} else {
		// The server calls hooks one at a time, so lines never interleave; an
		// *os.File is unbuffered, so each line is out as soon as it happens.
		cfg.OnEvent = func(e smtptest.Event) { fmt.Fprintln(stdout, smtptest.FormatEvent(e)) }
	}

	srv, err := smtptest.Start(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "fakemx: %v\n", err)
		return 1
	}
	defer srv.Close()
	if opts.certOut != "" {
		if err := os.WriteFile(opts.certOut, srv.CertPEM(), 0o644); err != nil {
			fmt.Fprintf(stderr, "fakemx: write certificate: %v\n", err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "fakemx: listening on %s\n", srv.Addr())
	stopHTTP, err := serveHTTP(opts.httpAddr, srv, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "fakemx: %v\n", err)
		return 1
	}

	<-ctx.Done()
	// The SMTP side closes first: that also ends waits and event streams,
	// which the HTTP server's shutdown would otherwise wait for.
	err = srv.Close()
	stopHTTP()
	if err != nil {
		fmt.Fprintf(stderr, "fakemx: close: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "fakemx: stopped")
	return 0
}

// serveHTTP serves the API and page on addr until the returned stop is
// called; with addr "" it serves nothing.
func serveHTTP(addr string, srv *smtptest.Server, stdout, stderr io.Writer) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http: %w", err)
	}
	hs := &http.Server{Handler: srv.HTTPHandler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(stderr, "fakemx: http: ", 0)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		hs.Serve(ln)
	}()
	fmt.Fprintf(stdout, "fakemx: web page and API on http://%s/\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
		<-done
	}, nil
}

const usage = `usage: fakemx [flags]
       fakemx --version
       fakemx expect --api URL --to ADDR [--subject TEXT] [--within 30s] ...  (fakemx expect -h)

Reply rules: STAGE[:MATCH][#ATTEMPT]=[delay DUR] (drop | CODE [ENH] [TEXT])
  STAGE is greeting, ehlo, mail, rcpt or data; e.g. 'rcpt:nobody@=550 5.1.1 No such user'
Rate limits: STAGE[:MATCH]=COUNT/PERIOD[,per=ip|sender]=CODE [ENH] [TEXT]
  e.g. 'rcpt:*@gmail.test=10/min=421 4.7.28 Unusual rate of mail'
After the 250: 'rcpt:gone@=250 then bounce 5.1.1 after 2s', 'rcpt:angry@=250 then complain abuse after 2s'
  send an RFC 3464 bounce or RFC 5965 complaint from <> to the sender, through --return-to HOST:PORT
The --http API serves the same flags as a script: GET/PUT /api/v1/script.

`

// check refuses flags that do not go together.
func (o options) check() error {
	if o.certOut != "" && !o.cfg.StartTLS && !o.cfg.ImplicitTLS {
		return errors.New("--cert-out needs --tls or --implicit-tls")
	}
	if o.cfg.ReturnTo != "" {
		if _, _, err := net.SplitHostPort(o.cfg.ReturnTo); err != nil {
			return fmt.Errorf("--return-to %q: want HOST:PORT", o.cfg.ReturnTo)
		}
	}
	return nil
}

// parseFlags turns the command line into options. Errors are one line;
// the usage is printed only for -h.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	var script smtptest.Script
	var flagErr error // the script flags' own error, clearer than flag's wrapping
	fs := flag.NewFlagSet("fakemx", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	scriptFlag := func(name, help string) {
		fs.Func(name, help, func(v string) error {
			if err := script.Set(name, v); err != nil {
				flagErr = err
				return err
			}
			return nil
		})
	}
	// 2526, next to relayq's own default 2525, so both run side by side;
	// the page, when asked for, is best on 8026: not relayq's admin 8025,
	// nor Mailpit's 1025/8025 (docs/fakemx.md).
	fs.StringVar(&o.cfg.Addr, "listen", "127.0.0.1:2526", "address to listen on")
	fs.StringVar(&o.httpAddr, "http", "", "serve the HTTP API and web page here, e.g. 127.0.0.1:8026 (default: off)")
	fs.Func("http-allowed-hosts", "host names (comma-separated, repeatable; NAME or NAME:PORT) the HTTP API answers besides IP addresses, localhost and the --http name, e.g. fakemx in a compose network", func(v string) error {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				o.cfg.HTTPAllowedHosts = append(o.cfg.HTTPAllowedHosts, h)
			}
		}
		return nil
	})
	fs.StringVar(&o.cfg.Hostname, "hostname", "", "name announced in the greeting (default fakemx.localhost)")
	scriptFlag(smtptest.FlagGreylist, "greylist new (IP, sender, recipient) triplets for this long (default 0: off)")
	scriptFlag(smtptest.FlagGreylistExpiry, "forget unconfirmed triplets retried later than this (default 0: never)")
	scriptFlag(smtptest.FlagGreylistText, "text of the greylisting 451 (default names the remaining wait)")
	scriptFlag(smtptest.FlagReply, "reply rule (repeatable), e.g. 'greeting=421 4.3.2 Busy'")
	scriptFlag(smtptest.FlagRateLimit, "token-bucket rate limit (repeatable), e.g. 'mail=5/min,per=sender=451 4.7.1 Slow down'")
	scriptFlag(smtptest.FlagPersona, "play a provider (repeatable): gmail, outlook, yahoo, greylist, greylist-wait, tarpit, flaky, with ,key=value overrides, e.g. 'gmail,rate=10/min'; ',client=IP' answers only that client")
	fs.Func("persona-file", "add the personas of this YAML file (the format of smtptest/internal/persona/personas.yaml)", func(v string) error {
		o.cfg.PersonaFiles = append(o.cfg.PersonaFiles, v)
		return nil
	})
	scriptFlag(smtptest.FlagLimitPerClient, "rate limit (repeatable) for one client IP only, e.g. '127.0.0.3=mail=5/s=421 4.7.0 Too many messages from your IP'")
	scriptFlag(smtptest.FlagMaxConnsPerIP, "refuse connections beyond this many open per IP, e.g. '2=421 4.7.0 Too many connections'")
	fs.StringVar(&o.cfg.ReturnTo, "return-to", "", "send the reports of 'then bounce'/'then complain' rules through this SMTP server (HOST:PORT) to each message's sender")
	fs.StringVar(&o.record, "record", "", "append accepted messages and refused attempts to this file as JSON lines")
	fs.BoolVar(&o.cfg.StartTLS, "tls", false, "offer STARTTLS with a self-signed certificate for 127.0.0.1/localhost")
	fs.BoolVar(&o.cfg.ImplicitTLS, "implicit-tls", false, "serve TLS from the first byte instead of STARTTLS")
	fs.StringVar(&o.certOut, "cert-out", "", "write the generated certificate (PEM) here, for clients to trust")
	fs.BoolVar(&o.cfg.AllowInsecureAuth, "insecure-auth", false, "offer AUTH without TLS")
	fs.BoolVar(&o.cfg.No8BitMIME, "no-8bitmime", false, "do not offer 8BITMIME, like smtp-sink -8 (not with TLS)")
	fs.BoolVar(&o.cfg.SMTPUTF8, "smtputf8", false, "offer SMTPUTF8 (RFC 6531)")
	fs.Int64Var(&o.cfg.MaxMessageBytes, "max-size", 0, "refuse messages larger than this many bytes (0: no limit)")
	fs.Func("auth", "require AUTH PLAIN/LOGIN with user:pass (repeatable)", func(s string) error {
		user, pass, ok := strings.Cut(s, ":")
		if !ok || user == "" {
			flagErr = fmt.Errorf("--auth %q: want user:pass", s)
			return flagErr
		}
		if o.cfg.Users == nil {
			o.cfg.Users = make(map[string]string)
		}
		o.cfg.Users[user] = pass
		return nil
	})
	if err := fs.Parse(args); err != nil {
		switch {
		case errors.Is(err, flag.ErrHelp):
			fs.SetOutput(stderr)
			fmt.Fprint(stderr, usage)
			fs.PrintDefaults()
			return o, err
		case flagErr != nil:
			return o, flagErr
		}
		return o, fmt.Errorf("%v (fakemx -h lists the flags)", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	// The name --http listens on is the server's own: its clients use it.
	if host, _, err := net.SplitHostPort(o.httpAddr); err == nil && host != "" {
		o.cfg.HTTPAllowedHosts = append(o.cfg.HTTPAllowedHosts, host)
	}
	if err := o.check(); err != nil {
		return o, err
	}
	o.cfg.Greylist, o.cfg.GreylistExpiry, o.cfg.GreylistText = script.Greylist, script.GreylistExpiry, script.GreylistText
	o.cfg.Rules, o.cfg.RateLimits, o.cfg.ConnLimit = script.Rules, script.RateLimits, script.ConnLimit
	o.cfg.Personas = script.Personas
	return o, nil
}
