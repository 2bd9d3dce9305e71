package config

import (
	"github.com/relayq/relayq/delivery/shaping"
)

// adaptiveKey is the per-entry key of shaping.providers and
// shaping.domains that turns adaptive pacing off for that scope.
const adaptiveKey = "adaptive"

// adaptive reads shaping.adaptive; the scopes whose entry says
// adaptive: false are added by shapingProviders and shapingDomains.
func (l *loader) adaptive() shaping.Adaptive {
	return shaping.Adaptive{
		Enabled:       l.boolean("shaping.adaptive.enabled"),
		Decrease:      l.float("shaping.adaptive.decrease"),
		Increase:      l.float("shaping.adaptive.increase"),
		IncreaseAfter: l.duration("shaping.adaptive.increase_after"),
		Hold:          l.duration("shaping.adaptive.hold"),
		Floor:         l.rate("shaping.adaptive.floor"),
		ForgetAfter:   l.duration("shaping.adaptive.forget_after"),
		Off:           map[shaping.Scope]bool{},
	}
}

// adapts reads an entry's adaptive key: absent is true (the section's
// shaping.adaptive.enabled decides).
func (e entry) adapts() bool {
	switch x := e.m[adaptiveKey].(type) {
	case nil:
		return true
	case bool:
		return x
	default:
		e.fail(adaptiveKey, "%s is not true or false", describe(x))
		return true
	}
}

// defaultAdaptive is shaping.adaptive as defaults.yaml sets it.
func defaultAdaptive() shaping.Adaptive {
	a := shaping.DefaultAdaptive()
	a.Off = map[shaping.Scope]bool{}
	return a
}
