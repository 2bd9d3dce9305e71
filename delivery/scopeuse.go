package delivery

import (
	"fmt"
	"slices"
	"strings"

	"github.com/relayq/relayq/delivery/shaping"
)

// CheckScope says whether any mail can be shaped under sc with the
// current routes, given the shaping policy's providers: nil when some
// mail can, else an error naming the scope the mail really uses. An
// operator's suspension of a scope no mail uses would be listed and do
// nothing, so relayq refuses it instead. Which mail uses which scope is
// the Router's ShapeKey: a static route's or the smarthost's key, else
// the domain (and, through its MX hosts, a provider).
func (e *Engine) CheckScope(sc shaping.Scope, providers []string) error {
	return checkScope(e.settings.Load().Router, providers, sc)
}

// checkScope is CheckScope for router r.
func checkScope(r Router, providers []string, sc shaping.Scope) error {
	// Mail to a domain with no route of its own: "*" means the wildcard
	// route or the smarthost takes it (no MX, no provider).
	const probe = "no-route-of-its-own.invalid"
	wildKey, wildMX := r.ShapeKey(probe)
	switch sc.Kind {
	case shaping.ScopeProvider:
		if !slices.Contains(providers, sc.Name) {
			known := "none are configured"
			if len(providers) > 0 {
				known = "configured: " + strings.Join(providers, ", ")
			}
			return fmt.Errorf("scope %s is never used: %s is not in shaping.providers (%s)", sc, sc.Name, known)
		}
		if !wildMX {
			return fmt.Errorf("scope %s is never used: mail without a route of its own is shaped as domain:%s (%s), and providers apply to MX delivery only", sc, wildKey, wildName(r))
		}
	case shaping.ScopeDomain:
		if sc.Name == "*" {
			if wildKey != "*" {
				return fmt.Errorf("scope %s is never used: there is no route \"*\" or smarthost; mail is shaped by its domain (domain:NAME) or provider", sc)
			}
			return nil
		}
		if key, _ := r.ShapeKey(sc.Name); key != sc.Name {
			return fmt.Errorf("scope %s is never used: mail to %s is shaped as domain:%s (%s)", sc, sc.Name, key, wildName(r))
		}
	}
	return nil
}

// wildName names what takes mail without a route of its own, for the
// messages above: the smarthost or route "*".
func wildName(r Router) string {
	if r.Destination("no-route-of-its-own.invalid") == "smarthost" {
		return "the smarthost"
	}
	return `route "*"`
}
