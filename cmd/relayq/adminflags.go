package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/internal/admin"
	"github.com/relayq/relayq/internal/sendmail"
)

// adminFlags are --admin, --ca-file, --token and --config, which every command that
// talks to a running relay through its admin API takes. Like postqueue
// reading main.cf, the CLI finds the relay from its configuration file:
// --admin (or RELAYQ_ADMIN_URL) wins, then admin.listen of --config, else
// of /etc/relayq/relayq.yaml when it exists, else admin.DefaultURL. The
// token likewise: --token, RELAYQ_ADMIN_TOKEN, then admin.token of that
// file. An https admin API (admin.tls) is trusted by --ca-file (env
// RELAYQ_ADMIN_CA_FILE), else by admin.tls.cert_file of that file, and by
// the system's roots (admintls.go).
type adminFlags struct {
	admin, token, config string
	caFile               string
	noToken              bool // healthcheck: /readyz needs no token
}

// define adds the four flags to fs.
func (a *adminFlags) define(fs *flag.FlagSet) {
	a.defineAdmin(fs)
	a.defineCAFile(fs)
	a.defineToken(fs)
	a.defineConfig(fs)
}

// defineAdmin is --admin. Its default is empty so that --help shows where
// the URL comes from rather than one answer.
func (a *adminFlags) defineAdmin(fs *flag.FlagSet) {
	fs.StringVar(&a.admin, "admin", "", "admin API URL (env RELAYQ_ADMIN_URL; default: admin.listen of --config, https:// with admin.tls)")
}

// defineCAFile is --ca-file, the trust for an https --admin.
func (a *adminFlags) defineCAFile(fs *flag.FlagSet) {
	fs.StringVar(&a.caFile, "ca-file", "", "PEM certificates to trust for an https admin API, besides the system's (env RELAYQ_ADMIN_CA_FILE; default: admin.tls.cert_file of --config)")
}

// defineToken is --token. It has no default so that --help never prints
// the token.
func (a *adminFlags) defineToken(fs *flag.FlagSet) {
	fs.StringVar(&a.token, "token", "", "admin API bearer token (env RELAYQ_ADMIN_TOKEN; default: admin.token of --config)")
}

// defineConfig is --config for the commands that ask a running relay.
func (a *adminFlags) defineConfig(fs *flag.FlagSet) {
	fs.StringVar(&a.config, "config", "", "the relay's YAML config, read for admin.listen and admin.token (default "+sendmail.DefaultConfig+" when it exists)")
}

// resolve fills in the URL and token from the environment and the
// configuration file; afterwards a.admin is the URL asked.
func (a *adminFlags) resolve() error {
	if a.admin == "" {
		a.admin = os.Getenv("RELAYQ_ADMIN_URL")
	}
	if a.token == "" && !a.noToken {
		a.token = os.Getenv("RELAYQ_ADMIN_TOKEN")
	}
	if a.caFile == "" {
		a.caFile = os.Getenv("RELAYQ_ADMIN_CA_FILE")
	}
	if a.admin != "" && (a.token != "" || a.noToken) {
		return nil
	}
	path := a.config
	if path == "" {
		if _, err := os.Stat(sendmail.DefaultConfig); err != nil {
			if a.admin == "" {
				a.admin = admin.DefaultURL
			}
			return nil
		}
		path = sendmail.DefaultConfig
	}
	cfg, err := config.Load(path)
	switch {
	case err != nil && a.config == "" && a.admin != "":
		// Only a token was wanted from the default file, and the URL came
		// from --admin: an unreadable root-only file must not stop the
		// command (the API then says whether it needs a token).
		return nil
	case err != nil:
		return fmt.Errorf("%w (or give the relay with --admin URL)", err)
	}
	if a.admin == "" {
		u, err := adminURL(cfg.Admin.Listen, cfg.Admin.TLS.Enabled())
		if err != nil {
			return fmt.Errorf("%s: admin.listen: %w", path, err)
		}
		a.admin = u
	}
	if a.token == "" && !a.noToken {
		a.token = cfg.Admin.Token
	}
	if a.caFile == "" {
		a.caFile = cfg.Admin.TLS.CertFile // the relay's own certificate
	}
	return nil
}

// adminURL is the URL a client on this host uses for admin.listen: an
// unspecified address (":8025", "0.0.0.0:8025", "[::]:8025") is asked on
// loopback; https:// when admin.tls is on.
func adminURL(listen string, https bool) (string, error) {
	if listen == "" {
		return "", errors.New("empty: the admin API is off, so no command can reach the relay")
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", err
	}
	switch ip := net.ParseIP(host); {
	case host == "":
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified() && ip.To4() != nil:
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	scheme := "http://"
	if https {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(host, port), nil
}

// client is an admin API client for the flags, each request bounded by
// timeout.
func (a *adminFlags) client(timeout time.Duration) (*admin.Client, error) {
	if err := a.resolve(); err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: timeout}
	if a.caFile != "" && strings.HasPrefix(strings.ToLower(a.admin), "https://") {
		tr, err := adminTransport(a.admin, a.caFile)
		if err != nil {
			return nil, err
		}
		hc.Transport = tr
	}
	return &admin.Client{BaseURL: a.admin, Token: a.token, HTTP: hc}, nil
}
