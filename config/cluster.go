package config

import (
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relayq/relayq/internal/redact"
)

// Cluster says how this node shares its shaping state with other relayq
// nodes through Redis; cmd/relayq hands these values to
// cluster.NewState as a cluster.Config.
type Cluster struct {
	// RedisURL is redis://[[user]:password@]host[:port][/db] or rediss://
	// (TLS); "" means a single node (no Redis).
	RedisURL string
	// RedisPasswordFile holds the Redis password, for a URL without one.
	RedisPasswordFile string
	// NodeName names this node in Redis; unique per node. Never empty
	// after Load: "" in the file means the system host name.
	NodeName string
	// ExpectedNodes divides every shaping limit while Redis is unreachable.
	ExpectedNodes int
	// Adopt are globs of other nodes' queue files this node may take over
	// when their owner lease has lapsed for AdoptAfter; empty: never.
	Adopt []string
	// AdoptAfter is how long a queue's lease must have lapsed before it is
	// adopted.
	AdoptAfter time.Duration
	// DrainOnStop: on SIGTERM, stop taking mail and hand the queue to
	// DrainTo (the load balancer's SMTP address) before exiting.
	DrainOnStop bool
	// DrainTo is HOST:PORT of the peers (through the load balancer).
	DrainTo string
}

// cluster reads the cluster: section.
func (l *loader) cluster() Cluster {
	return Cluster{
		RedisURL:          strings.TrimSpace(l.str("cluster.redis_url")),
		RedisPasswordFile: strings.TrimSpace(l.str("cluster.redis_password_file")),
		NodeName:          strings.TrimSpace(l.str("cluster.node_name")),
		ExpectedNodes:     l.intKey("cluster.expected_nodes"),
		Adopt:             l.strList("cluster.adopt"),
		AdoptAfter:        l.duration("cluster.adopt_after"),
		DrainOnStop:       l.boolean("cluster.drain_on_stop"),
		DrainTo:           strings.TrimSpace(l.str("cluster.drain_to")),
	}
}

// validateCluster checks the cluster: section and fills NodeName.
func (l *loader) validateCluster(c *Cluster) {
	l.atLeast("cluster.expected_nodes", int64(c.ExpectedNodes), 1)
	if c.NodeName == "" {
		if h, err := os.Hostname(); err == nil && h != "" {
			c.NodeName = h
		} else {
			l.failf("cluster.node_name", "empty and the system host name is unknown (%v); set it", err)
		}
	}
	if !validNodeName(c.NodeName) {
		l.failf("cluster.node_name", "%q is not a node name (1 to 128 letters, digits, '.', '-' and '_')", c.NodeName)
	}
	l.validateAdopt(c)
	urlPassword := false
	if c.RedisURL != "" {
		urlPassword = l.redisURL("cluster.redis_url", c.RedisURL)
	}
	if f := c.RedisPasswordFile; f != "" {
		const key = "cluster.redis_password_file"
		b, err := os.ReadFile(f)
		switch {
		case c.RedisURL == "":
			l.failf(key, "set, but cluster.redis_url is empty")
		case urlPassword:
			l.failf(key, "set, but cluster.redis_url carries a password too; keep one")
		case err != nil:
			l.failf(key, "%w", err)
		case strings.TrimSpace(string(b)) == "":
			l.failf(key, "%s is empty", f)
		}
	}
}

// validateAdopt checks cluster.adopt and cluster.adopt_after.
func (l *loader) validateAdopt(c *Cluster) {
	if c.AdoptAfter < time.Second {
		l.failf("cluster.adopt_after", "%v must be at least 1s (a queue's lease must lapse that long before a peer takes it)", c.AdoptAfter)
	}
	for i, g := range c.Adopt {
		g = strings.TrimSpace(g)
		c.Adopt[i] = g
		if _, err := filepath.Match(g, ""); err != nil || g == "" {
			l.failf("cluster.adopt", "%q is not a file pattern (glob) such as /var/lib/relayq/volumes/*/queue.db", g)
		}
	}
	if c.DrainOnStop && c.DrainTo == "" {
		l.failf("cluster.drain_to", "empty, but cluster.drain_on_stop is true: give the peers' SMTP address (the load balancer's), HOST:PORT")
	}
	if c.DrainTo != "" {
		if host, port, err := net.SplitHostPort(c.DrainTo); err != nil || host == "" || checkPort(port, 1) != nil {
			l.failf("cluster.drain_to", "%q is not HOST:PORT", c.DrainTo)
		}
	}
	if len(c.Adopt) > 0 && c.RedisURL == "" {
		l.failf("cluster.adopt", "set, but cluster.redis_url is empty: queue owner leases live in Redis")
	}
}

// redisURL checks a Redis URL the way go-redis reads it, without showing
// its password in the message, and reports whether it carries one.
func (l *loader) redisURL(key, raw string) (hasPassword bool) {
	u, err := url.Parse(raw)
	if err != nil {
		l.failf(key, "not a URL such as redis://127.0.0.1:6379/0")
		return false
	}
	// Error messages reach the log (a refused reload): no userinfo, query
	// or fragment in them, as in every line that names a URL.
	shown := redact.URL(raw)
	_, hasPassword = u.User.Password()
	switch {
	case u.Scheme != "redis" && u.Scheme != "rediss":
		l.failf(key, "%q: the scheme must be redis:// or rediss:// (TLS)", shown)
	case u.Hostname() == "":
		l.failf(key, "%q has no host; want e.g. redis://127.0.0.1:6379/0", shown)
	case u.RawQuery != "" || u.Fragment != "":
		l.failf(key, "%q: query parameters (%s) are not supported (relayq sets its own short timeouts)", shown, queryNames(u))
	}
	if p := u.Port(); p != "" {
		if err := checkPort(p, 1); err != nil {
			l.failf(key, "%q: %v", shown, err)
		}
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 || strings.Contains(db, "/") {
			l.failf(key, "%q: the path %q is not a database number such as /0", shown, u.Path)
		}
	}
	return hasPassword
}

// queryNames lists the names of a URL's query parameters, never their
// values (one may be a password), or "#" for a fragment alone.
func queryNames(u *url.URL) string {
	names := slices.Sorted(maps.Keys(u.Query()))
	if len(names) == 0 {
		return "#"
	}
	return strings.Join(names, ", ")
}

// validNodeName is the rule cluster.Node applies: safe in Redis keys and logs.
func validNodeName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c == '-' || c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}
