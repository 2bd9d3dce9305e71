package config

import (
	"net/netip"
	"os"
	"time"

	"github.com/relayq/relayq/delivery/egress"
	"github.com/relayq/relayq/delivery/shaping"
	"github.com/relayq/relayq/internal/tenant"
)

// Config is the whole relayq configuration after defaults, file and
// environment have been merged and validated. The other packages take the
// parts they need as plain values; none of them sees viper.
type Config struct {
	// Hostname is the name used in the greeting, EHLO, Received: and DSNs.
	// Never empty after Load: "" in the file means os.Hostname().
	Hostname string
	// ShutdownTimeout bounds a graceful shutdown.
	ShutdownTimeout time.Duration
	Submission      Submission
	Queue           Queue
	Admin           Admin
	Retry           Retry
	Delivery        Delivery
	// Shaping is the traffic shaping policy, for shaping.NewPolicy.
	Shaping shaping.Config
	DKIM    DKIM
	// Cluster shares the shaping state with other nodes.
	Cluster Cluster
	Log     Log
	// Events and Suppression: see events.go.
	Events      Events
	Suppression Suppression
	// Bounces is the return path (bounces.go).
	Bounces Bounces
	// Streams are the configured streams (streams.go); never empty after
	// Load.
	Streams []Stream
	// Unsubscribe is relayq's one-click unsubscribe listener (preflight.go).
	Unsubscribe Unsubscribe
	// Tenants are the configured tenants (tenants.go), for tenant.New;
	// empty, every credential is the default tenant's.
	Tenants []tenant.Tenant
	// File is the path Load read, "" when only defaults and environment apply.
	File string
}

// Submission configures the SMTP server applications submit mail to.
type Submission struct {
	// Listen are plain SMTP listeners (host:port); STARTTLS is offered when TLS is set.
	Listen []string
	// TLSListen are implicit-TLS listeners (RFC 8314); non-empty only when TLS is set.
	TLSListen []string
	TLS       TLSFiles
	// TrustedNetworks may relay without AUTH. Prefixes are masked (10.1.2.3/8 → 10.0.0.0/8).
	TrustedNetworks []netip.Prefix
	// Users may AUTH and then relay from anywhere. Usernames are unique.
	Users []User
	// HTTPListen is the HTTP submission API's host:port, "" for none; HTTPS when TLS is set.
	HTTPListen string
	// APIKeys authenticate HTTP submissions. Names are unique.
	APIKeys []APIKey
	// SESKeys authenticate the SES endpoint by SigV4 (sesKeys).
	SESKeys           []SESKey
	AllowInsecureAuth bool
	MaxMessageBytes   int64
	MaxRecipients     int
	// MaxConnections and MaxConnectionsPerIP bound concurrent client connections.
	MaxConnections      int
	MaxConnectionsPerIP int
	// ReadTimeout bounds each command (RFC 5321 4.5.3.2); DataTimeout the whole DATA upload.
	ReadTimeout time.Duration
	DataTimeout time.Duration
	// SessionTimeout bounds a whole connection, however busy it keeps.
	SessionTimeout time.Duration
	// AuthMaxFailures failed AUTH attempts from one IP lock it out for AuthLockout.
	AuthMaxFailures int
	AuthLockout     time.Duration
	// AddMissingHeaders adds Message-ID and Date to mail from authenticated
	// and trusted clients that lacks them, as Postfix does for local mail.
	AddMissingHeaders bool
	// IdempotencyWindow is how long an Idempotency-Key is kept; 0 turns keys off.
	IdempotencyWindow time.Duration
	// MaxHold is the furthest a submission may ask to be released
	// (FUTURERELEASE, send_at); 0 accepts no hold.
	MaxHold time.Duration
	// DefaultStream is the stream of a message neither its credential nor
	// its X-Relayq-Stream header places (see Config.Streams).
	DefaultStream string
	// ProxyProtocol applies to Listen, TLSListen and HTTPListen alike.
	ProxyProtocol ProxyProtocol
}

// ProxyProtocol is the PROXY protocol setting of a group of listeners
// (internal/proxyproto): the load balancers whose header names the client.
type ProxyProtocol struct {
	// Trusted are the proxies' networks, masked like TrustedNetworks;
	// empty turns the protocol off. When set, a header is required from
	// them and every other peer is refused.
	Trusted []netip.Prefix
}

// TLSFiles names a PEM certificate chain and its private key (submission.tls,
// admin.tls). Either both are set and Load has checked that they load as a
// key pair, or neither is.
type TLSFiles struct {
	CertFile string
	KeyFile  string
}

// Enabled reports whether a certificate is configured.
func (t TLSFiles) Enabled() bool { return t.CertFile != "" }

// User is one SMTP AUTH account.
type User struct {
	Username string
	// PasswordHash is a bcrypt hash ($2a$, $2b$ or $2y$); Load checked its form.
	PasswordHash string
	// Stream is the stream of every message the user submits; "" leaves
	// it to the X-Relayq-Stream header or default_stream.
	Stream string
	// Pool is the egress pool of the user's mail, unless its stream has
	// one; "" for delivery.egress.default_pool.
	Pool string
}

// Queue configures the durable message store.
type Queue struct {
	// Path is the bbolt file, created with its directory if missing.
	Path string
	// ReserveBytes is the room kept on the queue's disk for the mail
	// already queued: below it new mail is refused (452 4.3.1, HTTP 503)
	// and /readyz fails, while delivery and pruning go on. 0: none.
	ReserveBytes int64
}

// Admin configures the HTTP admin API.
type Admin struct {
	// Listen is host:port, or "" to disable the admin API.
	Listen string
	// Token is the required bearer token, or "" for none.
	Token string
	// ReadToken, when set, is a second token (monitoring, the console's
	// look-only login) valid only for reading metadata: /metrics, the
	// queue's envelopes, counts and shape, the shaping in force, events,
	// history, suppressions and TLS reports; never a body or raw headers,
	// never a change. Token must then be set too.
	ReadToken string
	// AllowedHosts are host names ("name" for any port, "name:port") the
	// API answers in the Host header besides IP addresses and localhost;
	// any other name is refused (DNS rebinding, see package admin).
	AllowedHosts []string
	// TLS, when enabled, makes the admin listener serve HTTPS only (the
	// API and the console); Load has checked that the pair loads.
	TLS TLSFiles
}

// Retry is the backoff schedule for transient delivery failures: the n-th
// retry waits InitialDelay*Multiplier^(n-1) capped at MaxDelay, plus up to Jitter.
type Retry struct {
	InitialDelay time.Duration // > 0
	Multiplier   float64       // >= 1
	Jitter       time.Duration // >= 0
	MaxDelay     time.Duration // >= InitialDelay
	// MaxAttempts bounces after this many attempts; 0 means no limit.
	MaxAttempts int
	// MaxAge bounces a message still undelivered this long after acceptance.
	MaxAge time.Duration
	// WarnAfter sends a "delayed" DSN at this age; 0 disables.
	WarnAfter time.Duration
}

// Values of Delivery.TLS.
const (
	DeliveryTLSOpportunistic = "opportunistic"
	DeliveryTLSRequired      = "required"
	DeliveryTLSNone          = "none"
)

// Values of Smarthost.TLS.
const (
	SmarthostTLSNone     = "none"
	SmarthostTLSStartTLS = "starttls"
	SmarthostTLSImplicit = "implicit"
)

// Delivery configures outbound SMTP.
type Delivery struct {
	Workers int
	// MaxConnsPerDomain is deprecated: it is shaping.defaults.max_connections
	// under its old name. After Load both hold the same value.
	MaxConnsPerDomain int
	// Routes maps a lower-case recipient domain (or "*" for every other
	// domain) to a next hop host:port.
	Routes    map[string]string
	Smarthost Smarthost
	// DNSServer is a host:port replacing the system resolver, or "".
	DNSServer string
	// TLS is DeliveryTLSOpportunistic, DeliveryTLSRequired or DeliveryTLSNone.
	TLS            string
	ConnectTimeout time.Duration
	CommandTimeout time.Duration
	// GreetingTimeout bounds the wait for a server's 220 greeting; never
	// longer than CommandTimeout, so a server that accepts and stays
	// silent does not hold a worker for a whole command timeout.
	GreetingTimeout time.Duration
	// MTASTS is MTASTSEnforce, MTASTSTesting or MTASTSOff (delivery.mta_sts).
	MTASTS string
	// MTASTSRootCAFile replaces the system roots for MTA-STS policy
	// fetches; tests only ("" = system roots).
	MTASTSRootCAFile string
	// DANE enables DANE (RFC 7672) for MX delivery; needs DNSServer on loopback.
	DANE bool
	// Egress is delivery.egress: the local addresses mail is sent from and
	// their pools, with the pools streams and credentials name (filled
	// in by Load); no sources is relayq as before (egress.go).
	Egress egress.Config
}

// Smarthost is a relay all mail goes through instead of MX lookups.
type Smarthost struct {
	// Address is host:port, or "" for no smarthost.
	Address string
	// Fallback are further host:port tried in order after a transient failure.
	Fallback []string
	// Username and Password are sent with AUTH when Username is set.
	Username string
	Password string
	// TLS is SmarthostTLSNone, SmarthostTLSStartTLS or SmarthostTLSImplicit.
	TLS string
	// AllowInsecureAuth permits credentials over a connection without TLS.
	AllowInsecureAuth bool
}

// Log configures the process log.
type Log struct {
	Format string // "text" or "json"
	Level  string // "debug", "info", "warn" or "error"
}

// Default returns the built-in configuration, the same values as the
// embedded defaults.yaml (a test keeps the two equal), with Hostname
// resolved as Load does. Each call returns a fresh copy.
func Default() *Config {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return &Config{
		Hostname:        host,
		ShutdownTimeout: 30 * time.Second,
		Submission: Submission{
			Listen:    []string{"127.0.0.1:2525"},
			TLSListen: []string{},
			TrustedNetworks: []netip.Prefix{
				netip.MustParsePrefix("127.0.0.0/8"),
				netip.MustParsePrefix("::1/128"),
			},
			Users:               []User{},
			APIKeys:             []APIKey{},
			MaxMessageBytes:     25 << 20,
			MaxRecipients:       100,
			MaxConnections:      1000,
			MaxConnectionsPerIP: 50,
			ReadTimeout:         5 * time.Minute,
			DataTimeout:         10 * time.Minute,
			SessionTimeout:      time.Hour,
			AuthMaxFailures:     5,
			AuthLockout:         5 * time.Minute,
			AddMissingHeaders:   true,
			IdempotencyWindow:   24 * time.Hour,
			MaxHold:             168 * time.Hour,
			DefaultStream:       "default",
			ProxyProtocol:       ProxyProtocol{Trusted: []netip.Prefix{}},
		},
		Queue: Queue{Path: "./relayq-data/queue.db", ReserveBytes: 50 << 20},
		Admin: Admin{Listen: "127.0.0.1:8025", AllowedHosts: []string{}},
		Retry: Retry{
			InitialDelay: 2 * time.Second,
			Multiplier:   2,
			Jitter:       time.Second,
			MaxDelay:     64 * time.Second,
			MaxAge:       24 * time.Hour,
			WarnAfter:    time.Hour,
		},
		Delivery: Delivery{
			Workers:           32,
			MaxConnsPerDomain: 10,
			Routes:            map[string]string{},
			Smarthost: Smarthost{
				Fallback: []string{},
				TLS:      SmarthostTLSStartTLS,
			},
			TLS:             DeliveryTLSOpportunistic,
			ConnectTimeout:  30 * time.Second,
			CommandTimeout:  5 * time.Minute,
			GreetingTimeout: time.Minute,
			MTASTS:          MTASTSEnforce,
		},
		Shaping: shaping.Config{
			Builtin:   true,
			Defaults:  shaping.Limits{MaxConnections: 10, MaxMessagesPerConnection: 100},
			Providers: []shaping.Provider{},
			Domains:   map[string]shaping.Limits{},
			Rules:     []shaping.Rule{},
			Adaptive:  defaultAdaptive(),
		},
		DKIM:        DKIM{Keys: []DKIMKey{}, Headers: []string{}},
		Cluster:     Cluster{NodeName: host, ExpectedNodes: 1, Adopt: []string{}, AdoptAfter: 30 * time.Second},
		Log:         Log{Format: "text", Level: "info"},
		Events:      Events{Retention: 168 * time.Hour, Webhooks: []Webhook{}},
		Suppression: Suppression{Auto: true, DomainExpire: 24 * time.Hour, Codes: []string{}},
		Bounces: Bounces{Listen: []string{}, Forward: true, MaxMessageBytes: 10 << 20, FeedbackLoops: []FeedbackLoop{},
			Limits:        BounceLimits{PerClient: 1000, PerAddress: 20, Window: time.Hour, DuplicateWindow: 24 * time.Hour},
			ProxyProtocol: ProxyProtocol{Trusted: []netip.Prefix{}}},
		Streams:     []Stream{{Name: "default", Weight: 1}},
		Unsubscribe: Unsubscribe{Listen: []string{}},
		Tenants:     []tenant.Tenant{},
	}
}
