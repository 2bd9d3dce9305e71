package main

import (
	"flag"
	"net/http"
	"os"
	"time"

	"github.com/relayq/relayq/internal/admin"
)

// adminFlags are --admin and --token, which every command that talks to a
// running relay through its admin API takes.
type adminFlags struct {
	admin, token string
}

// define adds the two flags to fs. --admin defaults to RELAYQ_ADMIN_URL,
// else admin.DefaultURL. --token has no default: client reads
// RELAYQ_ADMIN_TOKEN when it is empty, so --help never prints the token.
func (a *adminFlags) define(fs *flag.FlagSet) {
	a.defineAdmin(fs)
	a.defineToken(fs)
}

func (a *adminFlags) defineAdmin(fs *flag.FlagSet) { defineAdminURL(fs, &a.admin) }

func (a *adminFlags) defineToken(fs *flag.FlagSet) {
	fs.StringVar(&a.token, "token", "", "admin API bearer token (env RELAYQ_ADMIN_TOKEN)")
}

// defineAdminURL is --admin, for every command that talks to the admin
// API (healthcheck too, which needs no token).
func defineAdminURL(fs *flag.FlagSet, v *string) {
	fs.StringVar(v, "admin", envOr("RELAYQ_ADMIN_URL", admin.DefaultURL), "admin API URL (env RELAYQ_ADMIN_URL)")
}

// client is an admin API client for the flags, each request bounded by
// timeout.
func (a *adminFlags) client(timeout time.Duration) *admin.Client {
	token := a.token
	if token == "" {
		token = os.Getenv("RELAYQ_ADMIN_TOKEN")
	}
	return &admin.Client{BaseURL: a.admin, Token: token, HTTP: &http.Client{Timeout: timeout}}
}

// envOr is the environment variable key, or def when it is unset or empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
