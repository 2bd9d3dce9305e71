package main

// Wiring of the application-facing ways in besides SMTP: the HTTP
// submission API (package httpsubmit), `relayq apikey new` and the
// sendmail-compatible command (package sendmail), which also runs when
// the binary is invoked as "sendmail".

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"golang.org/x/crypto/bcrypt"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/internal/sendmail"
	"github.com/relayq/relayq/submission"
	"github.com/relayq/relayq/submission/httpsubmit"
)

// sendmailCmd is `relayq sendmail`; sendmail.Run prints its own errors.
// When the binary is called as sendmail (a symlink), main runs it with
// every argument.
func sendmailCmd(args []string, out io.Writer) error {
	if len(args) == 1 && isHelpWord(args[0]) { // sendmail's own -h is a hop count
		c, _ := lookup("sendmail")
		writeHelp(out, c, nil)
		return nil
	}
	if code := sendmail.Run(args, sendmailEnv()); code != 0 {
		return exitStatus(code)
	}
	return nil
}

func isSendmailName(argv0 string) bool {
	b := filepath.Base(argv0)
	return b == "sendmail"
}

// sendmailEnv connects the command to the relay's configuration and, for
// -bp, to `relayq queue list`.
func sendmailEnv() sendmail.Env {
	return sendmail.Env{
		LoadConfig: sendmailConfig,
		QueueList: func(out io.Writer, config string) error {
			if config == "" {
				return queueCmd([]string{"list"}, out)
			}
			return queueCmd([]string{"list", "--config", config}, out)
		},
	}
}

// sendmailConfig reads what the sendmail command needs from the relay's
// configuration file: the relay's hostname and where to submit. It uses
// config.LoadSubmitter, not Load, so that a user who is not root can run
// it: Load opens the TLS and DKIM keys the file names.
func sendmailConfig(path string) (sendmail.RelayConfig, error) {
	cfg, err := config.LoadSubmitter(path)
	if err != nil {
		return sendmail.RelayConfig{}, err
	}
	rc := sendmail.RelayConfig{Hostname: cfg.Hostname}
	if len(cfg.Listen) > 0 {
		rc.Server = cfg.Listen[0]
	}
	return rc, nil
}

// apikeyCmd is `relayq apikey new NAME`: a fresh key and its bcrypt hash,
// ready for submission.api_keys.
func apikeyCmd(args []string, out io.Writer) error {
	if helpRequested(args) {
		c, _ := lookup("apikey")
		writeHelp(out, c, nil)
		return nil
	}
	if len(args) != 2 || args[0] != "new" {
		return fmt.Errorf("usage: relayq apikey new NAME")
	}
	name := args[1]
	if !config.ValidAPIKeyName(name) {
		return fmt.Errorf("apikey: %q: a name is 1-64 letters, digits, '-' or '_'", name)
	}
	secret := make([]byte, 24)
	if _, err := rand.Read(secret); err != nil {
		return fmt.Errorf("apikey: %w", err)
	}
	key := name + "." + base64.RawURLEncoding.EncodeToString(secret)
	hash, err := bcrypt.GenerateFromPassword([]byte(key), bcrypt.DefaultCost)
	if err != nil {
		return fmt.Errorf("apikey: %w", err)
	}
	fmt.Fprintf(out, "key:  %s\n\nAdd to the configuration (the key itself is not stored; keep it safe):\n\nsubmission:\n  api_keys:\n    - name: %s\n      key_hash: %q\n", key, name, hash)
	return nil
}

// startHTTPSubmission serves the HTTP API when submission.http_listen is
// set; the returned stop function shuts it down (a no-op otherwise).
func startHTTPSubmission(cfg *config.Config, srv *submission.Server, log *slog.Logger) (func(context.Context), error) {
	if cfg.Submission.HTTPListen == "" {
		return func(context.Context) {}, nil
	}
	h := httpsubmit.New(httpsubmit.Options{Acceptor: srv.Acceptor(), Logger: log, UploadTimeout: cfg.Submission.DataTimeout, SESKeys: sesKeys(cfg),
		Proxy: proxyWrap(cfg.Submission.ProxyProtocol.Trusted, "submission.proxy_protocol.trusted", log)})
	if _, err := h.Listen(cfg.Submission.HTTPListen); err != nil {
		return nil, fmt.Errorf("submission.http_listen: %w", err)
	}
	return func(ctx context.Context) {
		if err := h.Shutdown(ctx); err != nil {
			log.Warn("HTTP submissions cut at shutdown", "err", err)
		}
	}, nil
}

// sesKeys converts the configured SES access keys for the HTTP API.
func sesKeys(cfg *config.Config) []httpsubmit.SESKey {
	out := make([]httpsubmit.SESKey, 0, len(cfg.Submission.SESKeys))
	for _, k := range cfg.Submission.SESKeys {
		out = append(out, httpsubmit.SESKey{AccessKeyID: k.AccessKeyID, Secret: k.Secret, APIKey: k.APIKey})
	}
	return out
}

// apiKeys converts the configured keys for the submission policy.
func apiKeys(cfg *config.Config) []submission.APIKey {
	out := make([]submission.APIKey, 0, len(cfg.Submission.APIKeys))
	for _, k := range cfg.Submission.APIKeys {
		out = append(out, submission.APIKey{Name: k.Name, KeyHash: k.KeyHash, Stream: k.Stream})
	}
	return out
}
