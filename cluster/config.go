package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/relayq/relayq/internal/redact"
)

// Config says how a node reaches the shared state. config.Load reads the
// first four fields from the cluster: section; the rest are for tests and
// tuning, and take their defaults when zero.
type Config struct {
	// RedisURL is redis://[user:password@]host:port/db or rediss://... (TLS).
	// "" means a single node: NewState returns an in-process state and no
	// Redis is needed.
	RedisURL string
	// PasswordFile holds the Redis password (one line; surrounding white
	// space is dropped), for a URL that carries none.
	PasswordFile string
	// NodeName names this node in Redis (its connection counts); unique per
	// node. "" means the host name.
	NodeName string
	// ExpectedNodes divides every limit while Redis is unreachable, so that
	// the nodes together stay near the configured limits. 0 means 1.
	ExpectedNodes int

	// LeaseTTL is how long a node's connection counts outlive its last
	// heartbeat: the time after which a dead node's slots come back.
	LeaseTTL time.Duration
	// Timeout bounds every Redis call (dial, read, write).
	Timeout time.Duration
	// Refresh is how often the suspensions in Redis are checked for
	// changes; a suspension begun on one node applies on the others
	// within about this time.
	Refresh time.Duration
	// Probe is how often an unreachable Redis is tried again.
	Probe time.Duration
	// ReleaseDelay is how long a released connection slot stays counted in
	// Redis before the flusher gives it back, so that the node's next
	// connection to the scope takes it back with no Redis call (a pooled
	// connection's slot passes from one message to the next). Other nodes
	// see the slot free that much later at most.
	ReleaseDelay time.Duration
}

// The defaults of the tuning fields.
const (
	DefaultLeaseTTL = 10 * time.Second
	DefaultTimeout  = 250 * time.Millisecond
	DefaultRefresh  = 100 * time.Millisecond
	DefaultProbe    = 500 * time.Millisecond
	// DefaultReleaseDelay is well under the 100 ms after which a delivery
	// refused for connections asks again.
	DefaultReleaseDelay = 10 * time.Millisecond
)

// withDefaults fills the zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.ExpectedNodes <= 0 {
		c.ExpectedNodes = 1
	}
	if c.NodeName == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return c, fmt.Errorf("cluster: node name: empty and the host name is unknown (%v); set cluster.node_name", err)
		}
		c.NodeName = h
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Refresh <= 0 {
		c.Refresh = DefaultRefresh
	}
	if c.Probe <= 0 {
		c.Probe = DefaultProbe
	}
	if c.ReleaseDelay <= 0 {
		c.ReleaseDelay = DefaultReleaseDelay
	}
	return c, nil
}

// redisOptions turns the URL and password file into client options with
// short timeouts and no retries: a failed call falls back to local limits
// at once rather than waiting.
func (c Config) redisOptions() (*redis.Options, error) {
	u := strings.TrimSpace(c.RedisURL)
	if !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") {
		return nil, fmt.Errorf("cluster: redis URL %q: want redis://host:port/db or rediss://host:port/db", redact.URL(u))
	}
	o, err := redis.ParseURL(u)
	if err != nil {
		// url.Parse's error quotes the whole URL, password and all.
		return nil, fmt.Errorf("cluster: redis URL %q: %w", redact.URL(u), redact.Error(err))
	}
	if c.PasswordFile != "" {
		if o.Password != "" {
			return nil, errors.New("cluster: the redis URL carries a password and a password file is set too; keep one")
		}
		b, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("cluster: redis password file: %w", err)
		}
		o.Password = strings.TrimSpace(string(b))
		if o.Password == "" {
			return nil, fmt.Errorf("cluster: redis password file %s is empty", c.PasswordFile)
		}
	}
	if o.TLSConfig != nil {
		o.TLSConfig.MinVersion = tls.VersionTLS12
	}
	o.Protocol = 2
	o.DialTimeout = c.Timeout
	o.ReadTimeout = c.Timeout
	o.WriteTimeout = c.Timeout
	o.PoolTimeout = c.Timeout
	// Every delivery worker (delivery.workers, 32 by default) may be in a
	// call at once; waiting for a pooled connection would count against
	// the timeout.
	o.PoolSize = 64
	o.ContextTimeoutEnabled = true
	o.MaxRetries = -1
	o.DialerRetries = 1
	o.DisableIdentity = true
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	o.ClientName = "relayq-" + c.NodeName
	return o, nil
}
