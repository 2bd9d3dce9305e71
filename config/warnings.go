package config

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/relayq/relayq/delivery/egress"
)

// Warning is a configuration that loads and works but is probably not what
// its author meant, or is dangerous. `relayq check-config` prints them and
// fails on them with --strict; serve logs them at start.
type Warning struct {
	Key     string // dotted key, or "" for the file as a whole
	Message string
}

func (w Warning) String() string {
	if w.Key == "" {
		return w.Message
	}
	return w.Key + ": " + w.Message
}

// Warnings inspects a loaded configuration for dangerous setups. It reads
// the file system (the queue directory, the config file) and, with egress
// sources, DNS (each source's PTR and EHLO name), but changes nothing.
func Warnings(c *Config) []Warning {
	var ws []Warning
	add := func(key, format string, args ...any) {
		ws = append(ws, Warning{Key: key, Message: fmt.Sprintf(format, args...)})
	}
	if c.File != "" {
		if data, err := os.ReadFile(c.File); err == nil {
			if v, err := parseYAML(data); err == nil && len(v.AllKeys()) == 0 {
				add("", "config %s sets nothing: the built-in defaults run", c.File)
			}
		}
	}
	for _, p := range c.Submission.TrustedNetworks {
		if p.Bits() == 0 {
			add("submission.trusted_networks", "%s trusts every address: anyone who can connect may relay mail through you (an open relay)", p)
		}
	}
	for _, pp := range []struct {
		key     string
		trusted []netip.Prefix
	}{{"submission.proxy_protocol.trusted", c.Submission.ProxyProtocol.Trusted}, {"bounces.proxy_protocol.trusted", c.Bounces.ProxyProtocol.Trusted}} {
		for _, p := range pp.trusted {
			if p.Bits() == 0 {
				add(pp.key, "%s trusts every address to name its client: anyone who can connect may claim any address, one in trusted_networks or one not yet locked out", p)
			}
		}
	}
	s := c.Submission
	if len(s.Users) > 0 && !s.TLS.Enabled() && s.AllowInsecureAuth {
		add("submission.allow_insecure_auth", "AUTH is offered without TLS: passwords cross the network in clear text")
	}
	if sh := c.Delivery.Smarthost; sh.Username != "" && sh.TLS == SmarthostTLSNone {
		add("delivery.smarthost.allow_insecure_auth", "the smarthost password is sent without TLS")
	}
	if c.Admin.Listen != "" && c.Admin.Token == "" && !loopbackListen(c.Admin.Listen) {
		add("admin.listen", "%s is reachable beyond this host and admin.token is empty: anyone who can connect can delete mail", c.Admin.Listen)
	}
	ws = append(ws, adminTokenWarnings(c.Admin)...)
	if err := writableDir(filepath.Dir(c.Queue.Path)); err != nil {
		add("queue.path", "%s: %v", c.Queue.Path, err)
	}
	if e := c.Delivery.Egress; e.Enabled() {
		// Through delivery.dns_server when set, as delivery resolves.
		for _, msg := range egress.CheckDNS(context.Background(), egress.DNSResolver(c.Delivery.DNSServer), e.Sources) {
			add("delivery.egress.sources", "%s: Gmail and Microsoft refuse or junk mail from an address without forward-confirmed reverse DNS", msg)
		}
	}
	return ws
}

// MinTokenLength is the shortest admin.token and admin.read_token
// check-config accepts without a warning: 16 characters from `openssl
// rand -hex 16` (32) or similar are beyond guessing at the admin API's
// limit of a few wrong tokens per address and five minutes, "abc" is not.
const MinTokenLength = 16

// adminTokenWarnings flags admin tokens too short to resist guessing, and
// a token sent in clear text beyond this host.
func adminTokenWarnings(a Admin) []Warning {
	if a.Listen == "" {
		return nil
	}
	var ws []Warning
	for _, t := range []struct{ key, val string }{{"admin.token", a.Token}, {"admin.read_token", a.ReadToken}} {
		if t.val != "" && len(t.val) < MinTokenLength {
			ws = append(ws, Warning{Key: t.key, Message: fmt.Sprintf(
				"is %d characters, shorter than %d: a short token can be guessed; use e.g. `openssl rand -hex 16`", len(t.val), MinTokenLength)})
		}
	}
	if a.Token != "" && !a.TLS.Enabled() && !loopbackListen(a.Listen) {
		ws = append(ws, Warning{Key: "admin.tls", Message: fmt.Sprintf(
			"not set while admin.listen %s is reachable beyond this host: the token crosses the network in clear text", a.Listen)})
	}
	return ws
}

// loopbackListen reports whether a listen address is loopback only.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// probeDir creates and removes an empty directory in dir: access(2)
// says yes to root everywhere, also where nothing can be created (/proc,
// /sys, a full or read-only file system the kernel reports late).
func probeDir(dir string) error {
	p, err := os.MkdirTemp(dir, ".relayq-check-")
	if err != nil {
		return fmt.Errorf("cannot create anything in %s: %w", dir, errors.Unwrap(err))
	}
	return os.Remove(p)
}

// writableDir checks that relayq could create or write the queue in dir:
// dir itself when it exists, else the nearest existing parent (relayq
// creates the missing directories).
func writableDir(dir string) error {
	for {
		fi, err := os.Stat(dir)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("%s is not a directory", dir)
		case err == nil:
			if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
				return fmt.Errorf("directory %s is not writable by this user: %w", dir, err)
			}
			return probeDir(dir)
		case !errors.Is(err, os.ErrNotExist):
			return err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}
