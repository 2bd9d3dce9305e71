package shaping

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"

	"github.com/relayq/relayq/smtpcodes"
)

// ScopeKind says what a scope groups: a provider's MX hosts or one domain.
type ScopeKind uint8

// The scope kinds. The zero ScopeKind means "no scope".
const (
	ScopeProvider ScopeKind = iota + 1
	ScopeDomain
)

// String is "provider" or "domain", the form of the config key and of the
// scope_kind metric label.
func (k ScopeKind) String() string {
	switch k {
	case ScopeProvider:
		return "provider"
	case ScopeDomain:
		return "domain"
	}
	return "none"
}

// ParseScopeKind reads "provider" or "domain"; "" is ScopeProvider, the
// default of a rule.
func ParseScopeKind(s string) (ScopeKind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "provider":
		return ScopeProvider, nil
	case "domain":
		return ScopeDomain, nil
	}
	return 0, fmt.Errorf("%q is not provider or domain", s)
}

// Action is what a rule does when it matches a reply.
type Action uint8

// The actions of a rule.
const (
	// ActionSuspend: nothing goes to the scope until the duration is over.
	ActionSuspend Action = iota + 1
	// ActionThrottle: the scope's message rate is halved (not below 1/min)
	// for the duration; a scope without a rate gets half its connections.
	ActionThrottle
	// ActionBounce: a transient reply is taken as permanent.
	ActionBounce
	// ActionSlow: a throttle signal for adaptive pacing (adaptive.go): the
	// scope's learned rate goes down, then learns its way back up.
	ActionSlow
)

// String is the config form of the action.
func (a Action) String() string {
	switch a {
	case ActionSuspend:
		return "suspend"
	case ActionThrottle:
		return "throttle"
	case ActionBounce:
		return "bounce"
	case ActionSlow:
		return "slow"
	}
	return "none"
}

// ParseAction reads "suspend", "throttle", "bounce" or "slow".
func ParseAction(s string) (Action, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "suspend":
		return ActionSuspend, nil
	case "throttle":
		return ActionThrottle, nil
	case "bounce":
		return ActionBounce, nil
	case "slow":
		return ActionSlow, nil
	}
	return 0, fmt.Errorf("%q is not suspend, throttle, bounce or slow", s)
}

// Scope is one unit of limits and suspensions: a configured provider, or
// a recipient domain (for a route or smarthost, its config key), and,
// with egress, the source address mail to it goes from: every source has
// its own counts, learned rate and suspensions (see Target.ForSource).
type Scope struct {
	Kind ScopeKind
	Name string
	// Source is the egress source's name; "" for mail from no particular
	// source, or for a suspension of the scope from every source.
	Source string
}

// String is "provider:NAME" or "domain:NAME", with "@SOURCE" after it for
// a source's scope: the form ParseScope reads.
func (s Scope) String() string {
	if s.Source != "" {
		return s.Kind.String() + ":" + s.Name + "@" + s.Source
	}
	return s.Kind.String() + ":" + s.Name
}

// Base is s from every source (Source cleared).
func (s Scope) Base() Scope { s.Source = ""; return s }

// IsZero reports whether s is no scope.
func (s Scope) IsZero() bool { return s.Kind == 0 }

// ParseScope reads what Scope.String writes, e.g. "provider:google" or
// "provider:google@ip2" (for `relayq queue resume SCOPE`). A bare name is
// a domain.
func ParseScope(s string) (Scope, error) {
	kind, name, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		kind, name = "domain", kind
	}
	k, err := ParseScopeKind(kind)
	if err != nil || kind == "" {
		return Scope{}, fmt.Errorf("shaping: scope %q: want provider:NAME or domain:NAME", s)
	}
	name, source, hasSource := strings.Cut(name, "@")
	name, source = normalName(name), strings.TrimSpace(source)
	if name == "" {
		return Scope{}, fmt.Errorf("shaping: scope %q has no name", s)
	}
	if hasSource && source == "" {
		return Scope{}, fmt.Errorf("shaping: scope %q: want a source's name after '@'", s)
	}
	return Scope{Kind: k, Name: name, Source: source}, nil
}

// Limits bound the traffic to one scope. A zero field is "not set": in
// Config.Defaults it means no limit, in a provider or domain entry it
// inherits the default.
type Limits struct {
	MaxConnections           int
	MaxMessageRate           Rate
	MaxMessagesPerConnection int
}

// or fills the fields of l that are not set from d.
func (l Limits) or(d Limits) Limits {
	if l.MaxConnections == 0 {
		l.MaxConnections = d.MaxConnections
	}
	if l.MaxMessageRate.IsZero() {
		l.MaxMessageRate = d.MaxMessageRate
	}
	if l.MaxMessagesPerConnection == 0 {
		l.MaxMessagesPerConnection = d.MaxMessagesPerConnection
	}
	return l
}

// Provider groups destinations by the host names of their MX records.
type Provider struct {
	// Name is lower-case letters, digits, '-' and '_'; it names the scope
	// in logs, the admin API and metrics.
	Name string
	// MXSuffixes match MX host names: ".google.com" matches
	// "aspmx.l.google.com"; without the leading dot a suffix also matches
	// the name itself. A domain belongs to the provider when every one of
	// its MX hosts matches.
	MXSuffixes []string
	Limits     Limits
}

// Rule reacts to a reply: the first rule whose Match finds the reply's
// "code enhanced text" (case-insensitive RE2) decides.
type Rule struct {
	// Name identifies the rule in logs; NewPolicy names unnamed user rules
	// "rules[N]".
	Name     string
	Match    string
	Action   Action
	Duration time.Duration // suspend and throttle: how long
	Scope    ScopeKind     // zero: ScopeProvider
	// Provider limits the rule to replies from that provider's scope ("":
	// any). The built-in rules use it; config has no key for it.
	Provider string
	// Listing marks a reply that names the sending address on a block
	// list (built-in rules only): it applies only to a Target of an egress
	// source, suspends that source's scope and says so in the Verdict, so
	// the caller moves the mail to another source instead of counting the
	// attempt or bouncing it. Without egress the rule does not apply.
	Listing bool
}

// Config is the shaping configuration as plain values (config.Load builds
// it from the shaping: section).
type Config struct {
	Defaults Limits
	// Builtin adds the embedded provider blocks and rules (builtin.yaml)
	// after the user's: a user provider of the same name replaces a
	// built-in one, and user rules are checked first.
	Builtin   bool
	Providers []Provider
	// Domains maps a lower-case recipient domain (for a static route or the
	// smarthost, the route's domain key or "*") to its limits.
	Domains map[string]Limits
	Rules   []Rule
	// Adaptive is how scopes learn their rate from throttle signals.
	Adaptive Adaptive
}

// FieldError is a problem with one value of a Config, named the way the
// config file spells it: Key "rules", Detail "[1].match".
type FieldError struct {
	Key    string
	Detail string
	Err    error
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("shaping.%s%s: %v", e.Key, e.Detail, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(key, detail, format string, args ...any) error {
	return &FieldError{Key: key, Detail: detail, Err: fmt.Errorf(format, args...)}
}

// Check reports the first value of c that cannot work, as a *FieldError.
func (c Config) Check() error {
	if err := c.Defaults.check("defaults", ""); err != nil {
		return err
	}
	names := map[string]bool{}
	for i, p := range c.Providers {
		at := fmt.Sprintf("[%d]", i)
		if err := p.check(at); err != nil {
			return err
		}
		if names[p.Name] {
			return fieldErr("providers", at+".name", "%q is listed twice", p.Name)
		}
		names[p.Name] = true
	}
	for dom, l := range c.Domains {
		if dom != "*" && !validName(strings.TrimSuffix(dom, "."), true) {
			return fieldErr("domains", "."+dom, "%q is not a domain name or \"*\"", dom)
		}
		if err := l.check("domains", "."+dom); err != nil {
			return err
		}
	}
	if err := c.Adaptive.check(); err != nil {
		return err
	}
	for i, r := range c.Rules {
		if _, err := r.compile(); err != nil {
			return &FieldError{Key: "rules", Detail: fmt.Sprintf("[%d]%s", i, err.(*FieldError).Detail), Err: err.(*FieldError).Err}
		}
	}
	return nil
}

func (l Limits) check(key, detail string) error {
	switch {
	case l.MaxConnections < 0:
		return fieldErr(key, detail+".max_connections", "%d must be at least 1", l.MaxConnections)
	case l.MaxMessagesPerConnection < 0:
		return fieldErr(key, detail+".max_messages_per_connection", "%d must be at least 1", l.MaxMessagesPerConnection)
	case l.MaxMessageRate.N < 0 || l.MaxMessageRate.Per < 0:
		return fieldErr(key, detail+".max_message_rate", "a negative rate")
	}
	return nil
}

func (p Provider) check(at string) error {
	if !validName(p.Name, false) {
		return fieldErr("providers", at+".name", "%q is not a provider name (lower-case letters, digits, '-' and '_')", p.Name)
	}
	if len(p.MXSuffixes) == 0 {
		return fieldErr("providers", at+".mx_suffixes", "empty: the provider %q would match no destination", p.Name)
	}
	for j, s := range p.MXSuffixes {
		if !validName(strings.TrimSuffix(strings.TrimPrefix(s, "."), "."), true) {
			return fieldErr("providers", fmt.Sprintf("%s.mx_suffixes[%d]", at, j), "%q is not a host name suffix such as \".google.com\"", s)
		}
	}
	return p.Limits.check("providers", at)
}

// compiledRule is a Rule ready to match.
type compiledRule struct {
	Rule
	re *regexp.Regexp
}

// compile checks r and compiles its pattern. Errors are *FieldError with
// Detail relative to the rule (".match").
func (r Rule) compile() (compiledRule, error) {
	if strings.TrimSpace(r.Match) == "" {
		return compiledRule{}, fieldErr("rules", ".match", "empty; a rule needs a regular expression")
	}
	if _, err := regexp.Compile(r.Match); err != nil {
		return compiledRule{}, fieldErr("rules", ".match", "%q is not an RE2 regular expression: %v", r.Match, unwrapRegexp(err, r.Match))
	}
	re, err := regexp.Compile("(?i)" + r.Match)
	if err != nil {
		return compiledRule{}, fieldErr("rules", ".match", "%q: %v", r.Match, err)
	}
	switch r.Action {
	case ActionSuspend, ActionThrottle:
		if r.Duration <= 0 {
			return compiledRule{}, fieldErr("rules", ".duration", "%v: a %s rule needs a duration of more than 0", r.Duration, r.Action)
		}
	case ActionBounce, ActionSlow:
	default:
		return compiledRule{}, fieldErr("rules", ".action", "missing; want suspend, throttle, bounce or slow")
	}
	if r.Scope != 0 && r.Scope != ScopeProvider && r.Scope != ScopeDomain {
		return compiledRule{}, fieldErr("rules", ".scope", "want provider or domain")
	}
	if r.Scope == 0 {
		r.Scope = ScopeProvider
	}
	return compiledRule{Rule: r, re: re}, nil
}

// unwrapRegexp keeps regexp's own explanation and the part of the
// pattern it is about, not a repetition of the whole pattern.
func unwrapRegexp(err error, pattern string) error {
	var se *syntax.Error
	if errors.As(err, &se) {
		if se.Expr == pattern {
			return errors.New(string(se.Code))
		}
		return fmt.Errorf("%s: `%s`", se.Code, se.Expr)
	}
	return err
}

// validName accepts LDH labels separated by dots (dots only when dotted):
// a typo check, not a DNS lookup. Provider names are one label, lower-case.
func validName(s string, dotted bool) bool {
	if s == "" || len(s) > 253 || (!dotted && (strings.Contains(s, ".") || strings.ToLower(s) != s)) {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			ok := c == '-' || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
			if !ok {
				return false
			}
		}
	}
	return true
}

// normalName lower-cases a domain or host name and drops a trailing dot.
func normalName(s string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
}

// Verdict is what the rule matching a reply says.
type Verdict struct {
	// Rule is the name of the rule that matched.
	Rule   string
	Action Action
	// Scope is the scope a suspend or throttle acts on.
	Scope Scope
	// Duration is how long a suspend or throttle lasts; Until is when it
	// ends (set by Shaper.React).
	Duration time.Duration
	Until    time.Time
	// Permanent: a bounce rule matched a transient reply; fail the
	// recipient now instead of retrying.
	Permanent bool
	// Listing: the reply names the source address on a block list
	// (Rule.Listing); the recipient is not at fault and goes again at once
	// from another source, neither counted nor bounced.
	Listing bool
}

// Match finds the first rule matching a non-success reply to t and says
// what it does. It changes nothing; Shaper.React applies the verdict.
func (p *Policy) Match(t Target, r smtpcodes.Reply) (Verdict, bool) {
	if r.Class == smtpcodes.Success {
		return Verdict{}, false
	}
	text := r.String()
	prov, hasProv := t.Provider()
	for _, cr := range p.rules {
		if cr.Provider != "" && (!hasProv || prov.Name != cr.Provider) || cr.Listing && t.Source() == "" {
			continue
		}
		if !cr.re.MatchString(text) {
			continue
		}
		v := Verdict{Rule: cr.Name, Action: cr.Action, Duration: cr.Duration, Scope: t.Domain()}
		if cr.Scope == ScopeProvider && hasProv {
			v.Scope = prov
		}
		v.Permanent = cr.Action == ActionBounce && r.Class == smtpcodes.Transient
		v.Listing = cr.Listing
		return v, true
	}
	return Verdict{}, false
}
