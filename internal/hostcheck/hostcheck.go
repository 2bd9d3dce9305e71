package hostcheck

import (
	"net"
	"net/netip"
	"strings"
)

// Rule decides which Host headers are answered. The zero Rule accepts IP
// literals and localhost only.
type Rule struct {
	// anyPort are configured names accepted with any port or none.
	anyPort map[string]bool
	// exact are configured "name:port" entries, accepted as written.
	exact map[string]bool
}

// New reads the allowed names: "name" or "name:port" entries, compared
// without case and without a trailing dot.
func New(allowed []string) Rule {
	hr := Rule{anyPort: map[string]bool{}, exact: map[string]bool{}}
	for _, a := range allowed {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if name, port, err := net.SplitHostPort(a); err == nil {
			hr.exact[net.JoinHostPort(canonName(name), port)] = true
			continue
		}
		hr.anyPort[canonName(strings.TrimSuffix(strings.TrimPrefix(a, "["), "]"))] = true
	}
	return hr
}

// canonName lower-cases a host name and drops its trailing dot.
func canonName(s string) string { return strings.TrimSuffix(strings.ToLower(s), ".") }

// splitHost splits a Host header into name and port ("" when absent).
func splitHost(hostport string) (name, port string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return h, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), ""
}

// Allows reports whether a request for host (r.Host) is answered.
func (hr Rule) Allows(host string) bool {
	if host == "" {
		return true
	}
	name, port := splitHost(host)
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	name = canonName(name)
	if name == "localhost" || hr.anyPort[name] {
		return true
	}
	return port != "" && hr.exact[net.JoinHostPort(name, port)]
}
