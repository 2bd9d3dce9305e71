// Command fakemx is a scriptable SMTP server for trying mail clients against
// greylisting, scripted failures, slow replies, TLS and AUTH. It prints one
// line per SMTP event and can append accepted messages to a JSONL file.
// The behaviour lives in package smtptest; this file only wires flags to it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/relayq/relayq/smtptest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args, serves until ctx ends and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, recordPath, certOut, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "fakemx: %v\n", err)
		return 2
	}

	var record *os.File
	if recordPath != "" {
		record, err = os.OpenFile(recordPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
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
	}
	// The server calls hooks one at a time, so lines never interleave; an
	// *os.File is unbuffered, so each line is out as soon as it happens.
	cfg.OnEvent = func(e smtptest.Event) { fmt.Fprintln(stdout, smtptest.FormatEvent(e)) }

	srv, err := smtptest.Start(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "fakemx: %v\n", err)
		return 1
	}
	if certOut != "" {
		if err := os.WriteFile(certOut, srv.CertPEM(), 0o644); err != nil {
			srv.Close()
			fmt.Fprintf(stderr, "fakemx: write certificate: %v\n", err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "fakemx: listening on %s\n", srv.Addr())

	<-ctx.Done()
	if err := srv.Close(); err != nil {
		fmt.Fprintf(stderr, "fakemx: close: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "fakemx: stopped")
	return 0
}

// parseFlags turns the command line into a smtptest.Config.
func parseFlags(args []string, stderr io.Writer) (cfg smtptest.Config, record, certOut string, err error) {
	fs := flag.NewFlagSet("fakemx", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: fakemx [flags]\n\nReply rules: STAGE[:MATCH][#ATTEMPT]=[delay DUR] (drop | CODE [ENH] [TEXT])\n  STAGE is greeting, ehlo, mail, rcpt or data; e.g. 'rcpt:nobody@=550 5.1.1 No such user'\n\n")
		fs.PrintDefaults()
	}
	// 2526, next to relayq's own default 2525, so both run side by side.
	fs.StringVar(&cfg.Addr, "listen", "127.0.0.1:2526", "address to listen on")
	fs.StringVar(&cfg.Hostname, "hostname", "", "name announced in the greeting (default fakemx.localhost)")
	fs.DurationVar(&cfg.Greylist, "greylist", 0, "greylist new (IP, sender, recipient) triplets for this long (0: off)")
	fs.DurationVar(&cfg.GreylistExpiry, "greylist-expiry", 0, "forget unconfirmed triplets retried later than this (0: never)")
	fs.StringVar(&cfg.GreylistText, "greylist-text", "", "text of the greylisting 451 (default names the remaining wait)")
	fs.StringVar(&record, "record", "", "append accepted messages to this file as JSON lines")
	fs.BoolVar(&cfg.StartTLS, "tls", false, "offer STARTTLS with a self-signed certificate for 127.0.0.1/localhost")
	fs.BoolVar(&cfg.ImplicitTLS, "implicit-tls", false, "serve TLS from the first byte instead of STARTTLS")
	fs.StringVar(&certOut, "cert-out", "", "write the generated certificate (PEM) here, for clients to trust")
	fs.BoolVar(&cfg.AllowInsecureAuth, "insecure-auth", false, "offer AUTH without TLS")
	fs.Int64Var(&cfg.MaxMessageBytes, "max-size", 0, "refuse messages larger than this many bytes (0: no limit)")
	fs.Func("reply", "reply rule (repeatable), e.g. 'greeting=421 4.3.2 Busy'", func(s string) error {
		r, err := smtptest.ParseRule(s)
		if err != nil {
			return err
		}
		cfg.Rules = append(cfg.Rules, r)
		return nil
	})
	fs.Func("auth", "require AUTH PLAIN/LOGIN with user:pass (repeatable)", func(s string) error {
		user, pass, ok := strings.Cut(s, ":")
		if !ok || user == "" {
			return errors.New("want user:pass")
		}
		if cfg.Users == nil {
			cfg.Users = make(map[string]string)
		}
		cfg.Users[user] = pass
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return cfg, "", "", err
	}
	if fs.NArg() > 0 {
		return cfg, "", "", fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if certOut != "" && !cfg.StartTLS && !cfg.ImplicitTLS {
		return cfg, "", "", errors.New("--cert-out needs --tls or --implicit-tls")
	}
	return cfg, record, certOut, nil
}
