package smtptest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relayq/relayq/smtptest/internal/persona"
)

// Script is the part of a server's behaviour that can be replaced while it
// runs: greylisting, reply rules, rate limits and the connection limit. Its
// textual form is one command-line flag of cmd/fakemx per line, e.g.
//
//	--greylist 3s
//	--reply rcpt:nobody@=550 5.1.1 No such user
//	--rate-limit rcpt:*@gmail.test=10/min=421 4.7.28 Unusual rate of mail
//	--limit-per-client 127.0.0.3=mail=5/s=421 4.7.0 Too many messages from your IP
//	--max-conns-per-ip 2=421 4.7.0 Too many connections
//
// Everything after the flag name is its value, spaces included (no shell
// quoting). Blank lines and lines starting with '#' are ignored.
type Script struct {
	Greylist       time.Duration
	GreylistExpiry time.Duration
	GreylistText   string
	Rules          []Rule
	RateLimits     []RateRule
	ConnLimit      ConnLimit
	// Personas are provider personas, NAME[,KEY=VALUE...] each
	// ("gmail,rate=10/min"); they answer after the rate limits and before
	// greylisting, in order.
	Personas []string
}

// Script flag names, shared with cmd/fakemx.
const (
	FlagGreylist       = "greylist"
	FlagGreylistExpiry = "greylist-expiry"
	FlagGreylistText   = "greylist-text"
	FlagReply          = "reply"
	FlagRateLimit      = "rate-limit"
	FlagMaxConnsPerIP  = "max-conns-per-ip"
	FlagLimitPerClient = "limit-per-client"
	FlagPersona        = "persona"
)

// ParseScript parses a script's text. The error names the first bad line,
// on one line: `line 2: --reply "rcpt=hello": bad reply code "hello"`.
func ParseScript(text string) (Script, error) {
	var sc Script
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		name, value := splitScriptLine(line)
		if err := sc.Set(name, value); err != nil {
			return Script{}, fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	return sc, nil
}

// splitScriptLine splits "--name value" or "--name=value".
func splitScriptLine(line string) (name, value string) {
	line = strings.TrimLeft(line, "-")
	i := strings.IndexAny(line, " \t=")
	if i < 0 {
		return line, ""
	}
	return line[:i], strings.TrimSpace(line[i+1:])
}

// Set applies one flag to sc, as cmd/fakemx does for each flag on its
// command line; the error is one line naming the flag and the value.
func (sc *Script) Set(name, value string) error {
	err := sc.set(name, value)
	if err != nil {
		return fmt.Errorf("--%s %q: %w", name, value, err)
	}
	return nil
}

func (sc *Script) set(name, value string) error {
	var err error
	switch name {
	case FlagGreylist, FlagGreylistExpiry:
		var d time.Duration
		d, err = time.ParseDuration(value)
		if err == nil && d < 0 {
			err = errors.New("negative duration")
		}
		if name == FlagGreylist {
			sc.Greylist = d
		} else {
			sc.GreylistExpiry = d
		}
	case FlagGreylistText:
		if hasControl(value) {
			return errors.New("text may not contain control characters")
		}
		sc.GreylistText = value
	case FlagReply:
		var r Rule
		if r, err = parseRule(value); err == nil {
			sc.Rules = append(sc.Rules, r)
		}
	case FlagRateLimit:
		var l RateRule
		if l, err = parseRateLimit(value); err == nil {
			sc.RateLimits = append(sc.RateLimits, l)
		}
	case FlagLimitPerClient:
		var l RateRule
		if l, err = ParseLimitPerClient(value); err == nil {
			sc.RateLimits = append(sc.RateLimits, l)
		}
	case FlagMaxConnsPerIP:
		sc.ConnLimit, err = parseConnLimit(value)
	case FlagPersona:
		var sp persona.Spec
		if sp, err = persona.ParseSpec(value); err == nil {
			sc.Personas = append(sc.Personas, sp.String())
		}
	default:
		return fmt.Errorf("unknown setting (want %s, %s, %s, %s, %s, %s, %s or %s)", FlagGreylist,
			FlagGreylistExpiry, FlagGreylistText, FlagReply, FlagRateLimit, FlagLimitPerClient, FlagMaxConnsPerIP, FlagPersona)
	}
	return err
}

// String renders sc in the syntax ParseScript accepts, one flag per line.
func (sc Script) String() string {
	var b strings.Builder
	line := func(name, value string) { fmt.Fprintf(&b, "--%s %s\n", name, value) }
	if sc.Greylist > 0 {
		line(FlagGreylist, sc.Greylist.String())
	}
	if sc.GreylistExpiry > 0 {
		line(FlagGreylistExpiry, sc.GreylistExpiry.String())
	}
	if sc.GreylistText != "" {
		line(FlagGreylistText, sc.GreylistText)
	}
	for _, r := range sc.Rules {
		line(FlagReply, r.String())
	}
	for _, l := range sc.RateLimits {
		if l.Client != "" {
			line(FlagLimitPerClient, l.Client+"="+l.String())
			continue
		}
		line(FlagRateLimit, l.String())
	}
	if sc.ConnLimit.Max > 0 {
		line(FlagMaxConnsPerIP, sc.ConnLimit.String())
	}
	for _, p := range sc.Personas {
		line(FlagPersona, p)
	}
	return b.String()
}

// Validate reports whether every part of sc can be served.
func (sc Script) Validate() error {
	if sc.Greylist < 0 || sc.GreylistExpiry < 0 {
		return errors.New("negative greylist duration")
	}
	if hasControl(sc.GreylistText) {
		return errors.New("greylist text may not contain control characters")
	}
	for i, r := range sc.Rules {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("rule %d (%s): %w", i, r, err)
		}
	}
	for i, l := range sc.RateLimits {
		if err := l.Validate(); err != nil {
			return fmt.Errorf("rate limit %d (%s): %w", i, l, err)
		}
	}
	if err := sc.ConnLimit.Validate(); err != nil {
		return fmt.Errorf("connection limit: %w", err)
	}
	for _, p := range sc.Personas {
		if _, err := persona.ParseSpec(p); err != nil {
			return fmt.Errorf("persona %q: %w", p, err)
		}
	}
	return nil
}

// scriptState is a script compiled for serving, with its own rule counters
// and rate buckets. The server swaps whole states atomically, so a command
// always sees one script, never half of two.
type scriptState struct {
	Script
	rules    *ruleSet
	limits   *rateLimiter
	personas []scriptPersona
}

// newScriptState compiles sc; personas are looked up in cat.
func newScriptState(sc Script, cat persona.Catalog) (*scriptState, error) {
	sc.Rules = append([]Rule(nil), sc.Rules...)
	sc.RateLimits = append([]RateRule(nil), sc.RateLimits...)
	sc.Personas = append([]string(nil), sc.Personas...)
	ps, err := compilePersonas(cat, sc.Personas)
	if err != nil {
		return nil, err
	}
	return &scriptState{Script: sc, rules: newRuleSet(sc.Rules), limits: newRateLimiter(sc.RateLimits), personas: ps}, nil
}

// script returns the state in force now.
func (s *Server) script() *scriptState { return s.state.Load() }

// Script returns the script in force now.
func (s *Server) Script() Script {
	sc := s.script().Script
	sc.Rules = append([]Rule(nil), sc.Rules...)
	sc.RateLimits = append([]RateRule(nil), sc.RateLimits...)
	sc.Personas = append([]string(nil), sc.Personas...)
	return sc
}

// SetScript replaces the script for every command from now on, also on open
// connections (a transaction under way continues under the new rules).
// Attempt counters and rate buckets start afresh; greylisting keeps the
// triplets it has seen.
func (s *Server) SetScript(sc Script) error {
	if err := sc.Validate(); err != nil {
		return fmt.Errorf("smtptest: script: %w", err)
	}
	st, err := newScriptState(sc, s.catalog)
	if err != nil {
		return fmt.Errorf("smtptest: script: %w", err)
	}
	s.state.Store(st)
	s.rec.touch()
	return nil
}

// Reset forgets every recorded message and event, the greylisted triplets,
// attempt counters and rate buckets, so that one server can serve test
// after test. Message IDs keep counting up, so an ID is never reused.
func (s *Server) Reset() {
	for {
		old := s.state.Load()
		fresh, _ := newScriptState(old.Script, s.catalog) // compiled before, so it compiles
		if s.state.CompareAndSwap(old, fresh) {
			break
		}
	}
	s.grey.reset()
	s.reports.reset()
	s.rec.reset()
}
