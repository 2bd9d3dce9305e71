package config

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/relayq/relayq/internal/suggest"
)

// clientEnv are RELAYQ_ variables that are not configuration keys: the
// command-line tools read them. A name here is never reported as misspelt.
// Add a client variable here when a subcommand starts reading one.
var clientEnv = map[string]bool{
	"RELAYQ_ADMIN_URL":     true, // relayq queue/healthcheck: where the admin API is
	"RELAYQ_ADMIN_CA_FILE": true, // and the certificates trusted for an https one
	"RELAYQ_DRAIN_AUTH":    true, // relayq queue drain: USER:PASS for the peer
	// relayq sendmail (package sendmail): where to submit, and AUTH.
	"RELAYQ_SENDMAIL_SERVER":   true,
	"RELAYQ_SENDMAIL_USERNAME": true,
	"RELAYQ_SENDMAIL_PASSWORD": true,
}

// checkEnvNames refuses a RELAYQ_ variable that names no key: a misspelt
// RELAYQ_RETRY_MAX_DELAYS would otherwise be ignored without a word and
// the default would run. The first one in sorted order is reported.
func (l *loader) checkEnvNames() {
	known := map[string]bool{}
	for k := range l.leaves {
		known[envName(k)] = true
	}
	var bad []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix+"_") && !known[name] && !clientEnv[name] {
			bad = append(bad, name)
		}
	}
	if len(bad) == 0 {
		return
	}
	sort.Strings(bad)
	msg := fmt.Sprintf("environment %s: not a relayq setting", bad[0])
	if s := suggestEnv(bad[0], known); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	} else {
		msg += " (every key's variable is RELAYQ_ plus the key in capitals, dots as underscores, e.g. RELAYQ_RETRY_MAX_DELAY)"
	}
	if len(bad) > 1 {
		msg += fmt.Sprintf("; also unknown: %s", strings.Join(bad[1:], ", "))
	}
	l.err = fmt.Errorf("%s", msg)
}

// suggestEnv returns the known variable closest to name, or "".
func suggestEnv(name string, known map[string]bool) string {
	best, bestDist := "", 4 // a few typos in a long name, not a different word
	for cand := range known {
		if d := suggest.Distance(name, cand); d < bestDist || (d == bestDist && cand < best) {
			best, bestDist = cand, d
		}
	}
	return best
}
