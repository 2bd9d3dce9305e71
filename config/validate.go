package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// validate checks values that decoded but cannot work, so that a mistake
// stops relayq at start-up with the key named rather than at the first
// message.
func (l *loader) validate(c *Config) {
	if c.Hostname != "" && !validHostname(c.Hostname) {
		l.failf("hostname", "%q is not a host name (letters, digits, '-' and '.')", c.Hostname)
	}
	l.positive("shutdown_timeout", c.ShutdownTimeout)
	l.validateSubmission(&c.Submission)
	if strings.TrimSpace(c.Queue.Path) == "" {
		l.failf("queue.path", "must not be empty")
	}
	if c.Queue.ReserveBytes < 0 {
		l.failf("queue.reserve_bytes", "must be 0 (no reserve) or more")
	}
	if c.Admin.Listen != "" {
		l.listenAddr("admin.listen", "", c.Admin.Listen)
	}
	switch a := c.Admin; {
	case a.ReadToken != "" && a.Token == "":
		l.failf("admin.read_token", "set, but admin.token is empty: without admin.token every request is allowed, so a read-only token restricts nothing")
	case a.ReadToken != "" && a.ReadToken == a.Token:
		l.failf("admin.read_token", "is the same as admin.token: give monitoring a token of its own")
	}
	for i, h := range c.Admin.AllowedHosts {
		l.allowedHost("admin.allowed_hosts", fmt.Sprintf("[%d]", i), h)
	}
	l.validateTLSFiles("admin.tls", c.Admin.TLS)
	l.validateRetry(&c.Retry)
	l.validateDelivery(&c.Delivery)
	l.validateShaping(c)
	l.validateDKIM(&c.DKIM)
	l.validateCluster(&c.Cluster)
	l.validateEvents(&c.Events, &c.Suppression)
	l.validateBounces(&c.Bounces)
	l.validateStreams(c)
	l.validateUnsubscribe(c)
	l.validateTenants(c)
	l.validateEgress(c)
	l.oneOf("log.format", c.Log.Format, "text", "json")
	l.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
}

func (l *loader) validateSubmission(s *Submission) {
	if len(s.Listen) == 0 && len(s.TLSListen) == 0 {
		l.failf("submission.listen", "empty, and so is submission.tls_listen: relayq would accept no mail")
	}
	for i, a := range s.Listen {
		l.listenAddr("submission.listen", fmt.Sprintf("[%d]", i), a)
	}
	for i, a := range s.TLSListen {
		l.listenAddr("submission.tls_listen", fmt.Sprintf("[%d]", i), a)
	}
	l.validateTLSFiles("submission.tls", s.TLS)
	if len(s.TLSListen) > 0 && !s.TLS.Enabled() {
		l.failf("submission.tls_listen", "needs submission.tls.cert_file and key_file")
	}
	seen := map[string]bool{}
	for i, u := range s.Users {
		at := fmt.Sprintf("[%d]", i)
		switch {
		case u.Username == "":
			l.failAt("submission.users", at, "username is empty")
		case seen[u.Username]:
			l.failAt("submission.users", at, "username %q is listed twice", u.Username)
		case !isBcrypt(u.PasswordHash):
			l.failAt("submission.users", at+".password_hash", "the hash of %q is not a bcrypt hash ($2a$, $2b$ or $2y$ followed by cost and 53 characters)", u.Username)
		}
		seen[u.Username] = true
	}
	if len(s.Users) > 0 && !s.TLS.Enabled() && !s.AllowInsecureAuth {
		// go-smtp advertises AUTH only over TLS or with AllowInsecureAuth
		// (RFC 4954 section 4): without either these users could never log in.
		l.failf("submission.users", "AUTH needs submission.tls (or allow_insecure_auth: true)")
	}
	l.validateAPIKeys(s)
	l.validateSESKeys(s)
	l.atLeast("submission.max_message_bytes", s.MaxMessageBytes, 1)
	l.atLeast("submission.max_recipients", int64(s.MaxRecipients), 1)
	l.atLeast("submission.max_connections", int64(s.MaxConnections), 1)
	l.atLeast("submission.max_connections_per_ip", int64(s.MaxConnectionsPerIP), 1)
	l.positive("submission.read_timeout", s.ReadTimeout)
	l.positive("submission.data_timeout", s.DataTimeout)
	l.positive("submission.session_timeout", s.SessionTimeout)
	l.atLeast("submission.auth_max_failures", int64(s.AuthMaxFailures), 1)
	l.positive("submission.auth_lockout", s.AuthLockout)
	l.validateHolds(s)
}

// validateTLSFiles loads the pair under section (submission.tls,
// admin.tls) now, so that a wrong path or a key that does not belong to
// the certificate is reported with its key and file.
func (l *loader) validateTLSFiles(section string, t TLSFiles) {
	cert, key := section+".cert_file", section+".key_file"
	switch {
	case t.CertFile == "" && t.KeyFile == "":
		return
	case t.CertFile == "":
		l.failf(cert, "empty, but %s is set; set both or neither", key)
		return
	case t.KeyFile == "":
		l.failf(key, "empty, but %s is set; set both or neither", cert)
		return
	}
	_, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err == nil {
		return
	}
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe) && pe.Path == t.KeyFile:
		l.failf(key, "%w", err)
	case errors.As(err, &pe):
		l.failf(cert, "%w", err)
	case strings.Contains(err.Error(), "private key"):
		l.failf(key, "%s does not fit certificate %s: %w", t.KeyFile, t.CertFile, err)
	default:
		l.failf(cert, "%s with key %s: %w", t.CertFile, t.KeyFile, err)
	}
}

func (l *loader) validateRetry(r *Retry) {
	l.positive("retry.initial_delay", r.InitialDelay)
	if math.IsNaN(r.Multiplier) || math.IsInf(r.Multiplier, 0) || r.Multiplier < 1 {
		l.failf("retry.multiplier", "%v must be a number of at least 1 (1 retries at a fixed interval)", r.Multiplier)
	}
	if r.Jitter < 0 {
		l.failf("retry.jitter", "%v is negative", r.Jitter)
	}
	if r.MaxDelay < r.InitialDelay {
		key := "retry.max_delay"
		if !l.setByUser(key) {
			key = "retry.initial_delay"
		}
		l.failf(key, "retry.max_delay (%v) is less than retry.initial_delay (%v)", r.MaxDelay, r.InitialDelay)
	}
	l.atLeast("retry.max_attempts", int64(r.MaxAttempts), 0)
	l.positive("retry.max_age", r.MaxAge)
	if r.WarnAfter < 0 {
		l.failf("retry.warn_after", "%v is negative (0 disables delay warnings)", r.WarnAfter)
	}
}

func (l *loader) validateDelivery(d *Delivery) {
	l.atLeast("delivery.workers", int64(d.Workers), 1)
	l.atLeast("delivery.max_conns_per_domain", int64(d.MaxConnsPerDomain), 1)
	for _, dom := range sortedKeys(d.Routes) {
		if dom != "*" && !validHostname(dom) {
			l.failAt("delivery.routes", "."+dom, "%q is not a domain name or \"*\"", dom)
		}
		l.hostPort("delivery.routes", "."+dom, d.Routes[dom])
	}
	sh := d.Smarthost
	if sh.Address != "" {
		l.hostPort("delivery.smarthost.address", "", sh.Address)
	}
	for i, a := range sh.Fallback {
		l.hostPort("delivery.smarthost.fallback", fmt.Sprintf("[%d]", i), a)
	}
	switch {
	case sh.Address == "" && len(sh.Fallback) > 0:
		l.failf("delivery.smarthost.fallback", "set, but delivery.smarthost.address is empty")
	case sh.Address == "" && sh.Username != "":
		l.failf("delivery.smarthost.username", "set, but delivery.smarthost.address is empty")
	case sh.Password != "" && sh.Username == "":
		l.failf("delivery.smarthost.password", "set, but delivery.smarthost.username is empty")
	}
	l.oneOf("delivery.smarthost.tls", sh.TLS, SmarthostTLSNone, SmarthostTLSStartTLS, SmarthostTLSImplicit)
	if sh.Username != "" && sh.TLS == SmarthostTLSNone && !sh.AllowInsecureAuth {
		l.failf("delivery.smarthost.tls", "none would send the password in clear text; use starttls or implicit, or set delivery.smarthost.allow_insecure_auth: true")
	}
	if d.DNSServer != "" {
		l.hostPort("delivery.dns_server", "", d.DNSServer)
	}
	l.oneOf("delivery.tls", d.TLS, DeliveryTLSOpportunistic, DeliveryTLSRequired, DeliveryTLSNone)
	l.positive("delivery.connect_timeout", d.ConnectTimeout)
	l.positive("delivery.command_timeout", d.CommandTimeout)
	l.positive("delivery.greeting_timeout", d.GreetingTimeout)
	l.validateVerifiedTLS(d)
}

func (l *loader) positive(key string, d time.Duration) {
	if d <= 0 {
		l.failf(key, "%v must be more than 0", d)
	}
}

func (l *loader) atLeast(key string, n, lowest int64) {
	if n < lowest {
		l.failf(key, "%d must be at least %d", n, lowest)
	}
}

func (l *loader) oneOf(key, val string, allowed ...string) {
	for _, a := range allowed {
		if val == a {
			return
		}
	}
	l.failf(key, "%q is not one of %s", val, strings.Join(allowed, ", "))
}

// listenAddr checks an address to listen on: the host may be empty (every
// address) and the port may be 0 (any free port, used by tests).
func (l *loader) listenAddr(leaf, detail, addr string) {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		err = checkPort(port, 0)
	}
	if err == nil && host != "" && !validHostname(host) && net.ParseIP(host) == nil {
		err = fmt.Errorf("bad host %q", host)
	}
	if err != nil {
		l.failAt(leaf, detail, "%q is not host:port (e.g. 127.0.0.1:2525): %v", addr, err)
	}
}

// hostPort checks an address to connect to: both parts required.
func (l *loader) hostPort(leaf, detail, addr string) {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		err = checkPort(port, 1)
	}
	if err == nil && !validHostname(host) && net.ParseIP(host) == nil {
		err = fmt.Errorf("bad host %q", host)
	}
	if err != nil {
		l.failAt(leaf, detail, "%q is not host:port (e.g. mx.example.net:25): %v", addr, err)
	}
}

// allowedHost checks an admin.allowed_hosts entry: a host name, or a host
// name and port. IP addresses and localhost are always allowed, so an IP
// address is not an entry (nor is "*": it is not a name).
func (l *loader) allowedHost(leaf, detail, entry string) {
	host := entry
	var err error
	if h, port, splitErr := net.SplitHostPort(entry); splitErr == nil {
		host, err = h, checkPort(port, 1)
	}
	switch {
	case err != nil:
	case strings.ContainsAny(host, "[]:") || net.ParseIP(host) != nil:
		err = errors.New("IP addresses are always allowed; list host names only")
	case !validHostname(host):
		err = fmt.Errorf("bad host name %q", host)
	}
	if err != nil {
		l.failAt(leaf, detail, "%q is not a host name or host:port (e.g. relay.example.net or relay.example.net:8025): %v", entry, err)
	}
}

func checkPort(port string, lowest int) error {
	n, err := strconv.Atoi(port)
	if err != nil || n < lowest || n > 65535 {
		return fmt.Errorf("port %q is not a number from %d to 65535", port, lowest)
	}
	return nil
}

// validHostname accepts the LDH names of RFC 1123 section 2.1 (plus '_',
// seen in real internal names); it is a typo check, not a DNS lookup.
func validHostname(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			ok := r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
			if !ok {
				return false
			}
		}
	}
	return true
}

// isBcrypt checks the modular-crypt form of a bcrypt hash. bcrypt.Cost
// alone accepts other "$2?$" variants, so the prefix is checked too.
func isBcrypt(h string) bool {
	if len(h) != 60 || !(strings.HasPrefix(h, "$2a$") || strings.HasPrefix(h, "$2b$") || strings.HasPrefix(h, "$2y$")) {
		return false
	}
	_, err := bcrypt.Cost([]byte(h))
	return err == nil
}
