package config

import (
	"fmt"
	"regexp"
	"strings"
)

// Stream is one configured stream: a class of mail (transactional, bulk)
// that gets Weight shares of every scope its mail competes for.
type Stream struct {
	Name   string
	Weight int
	// Preflight are its checks at acceptance (preflight.go).
	Preflight Preflight
	// Pool is the egress pool of the stream's mail ("": its credential's
	// or delivery.egress.default_pool).
	Pool string
}

// maxWeight bounds a stream's weight: ratios beyond a million to one
// mean "never wait behind", which a weight this large already does.
const maxWeight = 1_000_000

// streamKey is the optional key of users[] and api_keys[] that names the
// credential's stream.
const streamKey = "stream"

// streamName is what a stream may be called: it is a metric label value
// and a header value, so short and plain.
var streamName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// streams reads the streams list. Empty, it is one stream named by
// submission.default_stream with weight 1, so a configuration written
// before streams behaves as before.
func (l *loader) streams() []Stream {
	out := []Stream{}
	for _, e := range l.entries("streams", "stream", []string{"name", "weight", "preflight", poolKey}) {
		s := Stream{Name: strings.TrimSpace(e.str("name")), Weight: 1, Preflight: e.preflight(), Pool: strings.TrimSpace(e.str(poolKey))}
		if w, set := e.m["weight"]; set {
			n, ok := w.(int)
			if !ok || n < 1 || n > maxWeight {
				e.fail("weight", "%s must be a whole number from 1 to %d (its share against the other streams)", describe(w), maxWeight)
				return out
			}
			s.Weight = n
		}
		out = append(out, s)
	}
	return out
}

// validateStreams checks the stream names the configuration uses: each
// stream once, default_stream and every credential's stream among them.
// With no streams listed it supplies the one default stream.
func (l *loader) validateStreams(c *Config) {
	def := c.Submission.DefaultStream
	if !streamName.MatchString(def) {
		l.failf("submission.default_stream", "%q is not a stream name (1-32 lower-case letters, digits, '-' or '_')", def)
		return
	}
	if len(c.Streams) == 0 {
		c.Streams = []Stream{{Name: def, Weight: 1}}
	}
	known := map[string]bool{}
	for i, s := range c.Streams {
		switch {
		case !streamName.MatchString(s.Name):
			l.failAt("streams", fmt.Sprintf("[%d]", i)+".name", "%q is not a stream name (1-32 lower-case letters, digits, '-' or '_')", s.Name)
		case known[s.Name]:
			l.failAt("streams", fmt.Sprintf("[%d]", i), "stream %q is listed twice", s.Name)
		}
		known[s.Name] = true
	}
	if !known[def] {
		l.failf("submission.default_stream", "%q is not one of the streams listed under streams", def)
	}
	for i, u := range c.Submission.Users {
		if u.Stream != "" && !known[u.Stream] {
			l.failAt("submission.users", fmt.Sprintf("[%d]", i)+".stream", "user %q names stream %q, which streams does not list", u.Username, u.Stream)
		}
	}
	for i, k := range c.Submission.APIKeys {
		if k.Stream != "" && !known[k.Stream] {
			l.failAt("submission.api_keys", fmt.Sprintf("[%d]", i)+".stream", "key %q names stream %q, which streams does not list", k.Name, k.Stream)
		}
	}
}
