package smtptest

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// RateKey says what a RateRule counts separately.
type RateKey string

// Rate limit keys: the client's IP address (the default) or the domain of
// the transaction's sender.
const (
	PerIP     RateKey = "ip"
	PerSender RateKey = "sender"
)

// Bounds on a rate so that token arithmetic in int64 nanoseconds cannot
// overflow (maxRateCount * maxRateEvery < 2^63).
const (
	maxRateCount = 100_000
	maxRateEvery = 24 * time.Hour
)

// RateRule answers commands at Stage with a refusal once a client (or a
// sender domain) has used up its token bucket: Count tokens, refilled at
// Count per Every, one taken per matching command. Its textual form is
// parsed by ParseRateLimit and produced by String.
type RateRule struct {
	// Stage is where commands are counted and refused: greeting, ehlo,
	// mail, rcpt or data.
	Stage Stage
	// Match selects commands as in Rule.Match; empty means all.
	Match string
	// Per is what has a bucket of its own; empty means PerIP.
	Per RateKey
	// Client, when set, is the one client IP the limit counts and refuses
	// (--limit-per-client): other clients are not limited by it, so each
	// of a relay's source addresses can be given its own rate.
	Client string
	// Count is the bucket size and the number of tokens refilled per Every.
	Count int
	// Every is the refill period.
	Every time.Duration
	// Code, Enhanced and Text are the refusal (4xx or 5xx).
	Code     int
	Enhanced EnhancedCode
	Text     string
}

// ParseRateLimit parses `STAGE[:MATCH]=COUNT/PERIOD[,per=ip|sender]=REPLY`,
// where PERIOD is s, min, h or a duration ("10/30s") and REPLY is
// `CODE [ENH] [TEXT]`. Example:
//
//	rcpt:*@gmail.test=10/min=421 4.7.28 Our system has detected an unusual rate of mail
func ParseRateLimit(s string) (RateRule, error) {
	l, err := parseRateLimit(s)
	if err != nil {
		return l, fmt.Errorf("smtptest: rate limit %q: %w", s, err)
	}
	return l, nil
}

func parseRateLimit(s string) (RateRule, error) {
	var l RateRule
	scope, rest, ok := strings.Cut(s, "=")
	if !ok {
		return l, errors.New("want STAGE[:MATCH]=COUNT/PERIOD[,per=ip|sender]=REPLY")
	}
	rate, reply, ok := strings.Cut(rest, "=")
	if r, ok2 := strings.CutSuffix(rate, ",per"); ok2 {
		var per string
		per, reply, ok = strings.Cut(reply, "=")
		l.Per, rate = RateKey(strings.ToLower(per)), r
	}
	if !ok {
		return l, errors.New("missing '=REPLY' after the rate")
	}
	stage, match, hasMatch := strings.Cut(scope, ":")
	l.Stage = Stage(strings.ToLower(strings.TrimSpace(stage)))
	l.Match = match
	if hasMatch && match == "" {
		return l, errors.New("empty match after ':'")
	}
	if err := parseRate(&l, strings.TrimSpace(rate)); err != nil {
		return l, err
	}
	var r Rule
	if err := parseAction(&r, reply); err != nil {
		return l, err
	}
	if r.Delay != 0 || r.Drop {
		return l, errors.New("the reply must be CODE [ENH] [TEXT], without delay or drop")
	}
	l.Code, l.Enhanced, l.Text = r.Code, r.Enhanced, r.Text
	return l, l.Validate()
}

// parseRate reads "COUNT/PERIOD".
func parseRate(l *RateRule, s string) error {
	n, unit, ok := strings.Cut(s, "/")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || n == "" || n[0] == '+' || n[0] == '-' {
		return fmt.Errorf("bad rate %q: want COUNT/PERIOD, e.g. 10/min", s)
	}
	l.Count = count
	switch strings.ToLower(unit) {
	case "s", "sec", "second":
		l.Every = time.Second
	case "m", "min", "minute":
		l.Every = time.Minute
	case "h", "hour":
		l.Every = time.Hour
	default:
		d, err := time.ParseDuration(unit)
		if err != nil {
			return fmt.Errorf("bad rate period %q: want s, min, h or a duration such as 30s", unit)
		}
		l.Every = d
	}
	return nil
}

// Validate reports whether l can be served and written back by String.
func (l RateRule) Validate() error {
	r := Rule{Stage: l.Stage, Match: l.Match, Code: l.Code, Enhanced: l.Enhanced, Text: l.Text}
	if err := r.Validate(); err != nil {
		return err
	}
	if l.Code < 400 {
		return fmt.Errorf("reply code %d: a rate limit refuses, want 4xx or 5xx", l.Code)
	}
	if l.Client != "" && net.ParseIP(l.Client) == nil {
		return fmt.Errorf("client %q: want an IP address", l.Client)
	}
	switch l.Per {
	case "", PerIP:
	case PerSender:
		if l.Stage == StageGreeting || l.Stage == StageEHLO {
			return fmt.Errorf("per=sender needs a sender: use it at mail, rcpt or data, not %s", l.Stage)
		}
	default:
		return fmt.Errorf("unknown per=%s (want ip or sender)", l.Per)
	}
	if l.Count < 1 || l.Count > maxRateCount {
		return fmt.Errorf("rate count %d out of range (1..%d)", l.Count, maxRateCount)
	}
	if l.Every <= 0 || l.Every > maxRateEvery {
		return fmt.Errorf("rate period %v out of range (0..%v)", l.Every, maxRateEvery)
	}
	return nil
}

// ParseLimitPerClient parses `IP=RULE`, RULE as ParseRateLimit reads it:
// a rate limit that counts and refuses only the client IP. Example:
//
//	127.0.0.3=mail=5/s=421 4.7.0 [127.0.0.3] Too many messages from your IP
func ParseLimitPerClient(s string) (RateRule, error) {
	ip, rule, ok := strings.Cut(s, "=")
	if !ok || net.ParseIP(strings.TrimSpace(ip)) == nil {
		return RateRule{}, fmt.Errorf("smtptest: limit per client %q: want IP=STAGE[:MATCH]=COUNT/PERIOD=REPLY", s)
	}
	l, err := ParseRateLimit(rule)
	l.Client = strings.TrimSpace(ip)
	return l, err
}

// String renders l in the syntax ParseRateLimit accepts (without Client,
// which --limit-per-client puts in front: see Script.String).
func (l RateRule) String() string {
	var b strings.Builder
	b.WriteString(string(l.Stage))
	if l.Match != "" {
		b.WriteString(":" + l.Match)
	}
	b.WriteString("=" + strconv.Itoa(l.Count) + "/")
	switch l.Every {
	case time.Second:
		b.WriteString("s")
	case time.Minute:
		b.WriteString("min")
	case time.Hour:
		b.WriteString("h")
	default:
		b.WriteString(l.Every.String())
	}
	if l.Per != "" {
		b.WriteString(",per=" + string(l.Per))
	}
	r := Rule{Stage: l.Stage, Code: l.Code, Enhanced: l.Enhanced, Text: l.Text}
	_, action, _ := strings.Cut(r.String(), "=")
	b.WriteString("=" + action)
	return b.String()
}

// smtpError is the refusal l answers with, defaults filled in.
func (l RateRule) smtpError() *smtp.SMTPError {
	e := Rule{Code: l.Code, Enhanced: l.Enhanced, Text: l.Text}.smtpError()
	if l.Text == "" {
		e.Message = "Rate limit exceeded, try again later"
	}
	return e
}

// rateLimiter keeps one token bucket per (limit, key). Token amounts are
// kept in units of 1/Count token-periods, so that a refill is exact integer
// arithmetic: a full bucket holds Count*Every, a command costs Every, and
// each nanosecond adds Count.
type rateLimiter struct {
	limits []RateRule
	lower  []string // each limit's Match, lower-cased once

	mu      sync.Mutex
	buckets map[bucketKey]*bucket
}

type bucketKey struct {
	limit int
	key   string
}

type bucket struct {
	level int64 // in ns·count units; full is Count*Every
	last  time.Time
}

func newRateLimiter(limits []RateRule) *rateLimiter {
	rl := &rateLimiter{limits: limits, buckets: make(map[bucketKey]*bucket)}
	for _, l := range limits {
		rl.lower = append(rl.lower, strings.ToLower(l.Match))
	}
	return rl
}

// take charges one token to every limit at stage whose match applies, and
// returns the first limit whose bucket was empty. ip and sender pick the
// bucket; args are what Match is tried against.
func (rl *rateLimiter) take(now time.Time, stage Stage, ip, sender string, args ...string) (RateRule, bool) {
	if len(rl.limits) == 0 {
		return RateRule{}, false
	}
	lowered := lowerAll(args)
	rl.mu.Lock()
	defer rl.mu.Unlock()
	var refused *RateRule
	for i := range rl.limits {
		l := &rl.limits[i]
		if l.Stage != stage || l.Client != "" && l.Client != ip || !matchesAny(rl.lower[i], lowered) {
			continue
		}
		key := ip
		if l.Per == PerSender {
			key = domainOf(sender)
		}
		if !rl.bucket(i, key, now).take(l, now) && refused == nil {
			refused = l
		}
	}
	if refused == nil {
		return RateRule{}, false
	}
	return *refused, true
}

// bucket returns the bucket for (limit i, key), full when new.
func (rl *rateLimiter) bucket(i int, key string, now time.Time) *bucket {
	k := bucketKey{i, key}
	b, ok := rl.buckets[k]
	if !ok {
		l := rl.limits[i]
		b = &bucket{level: int64(l.Count) * int64(l.Every), last: now}
		rl.buckets[k] = b
	}
	return b
}

// take refills b for the time since its last use and takes one token if
// there is one. A clock that goes backwards refills nothing.
func (b *bucket) take(l *RateRule, now time.Time) bool {
	full := int64(l.Count) * int64(l.Every)
	if elapsed := now.Sub(b.last); elapsed > 0 {
		if elapsed >= l.Every {
			b.level = full
		} else {
			b.level = min(full, b.level+int64(elapsed)*int64(l.Count))
		}
		b.last = now
	}
	if b.level < int64(l.Every) {
		return false
	}
	b.level -= int64(l.Every)
	return true
}

// domainOf returns the lower-cased domain of an address, or the whole
// address when it has no '@' (the null sender "" stays "").
func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		addr = addr[i+1:]
	}
	return strings.ToLower(addr)
}

// ConnLimit refuses a connection at greeting when its client IP already
// has Max connections open. Its textual form is `MAX[=REPLY]`.
type ConnLimit struct {
	// Max is the number of open connections allowed per client IP; 0 means
	// no limit.
	Max      int
	Code     int
	Enhanced EnhancedCode
	Text     string
}

// ParseConnLimit parses `MAX[=CODE [ENH] [TEXT]]`, e.g.
// "2=421 4.7.0 Too many connections"; the default reply is that one.
func ParseConnLimit(s string) (ConnLimit, error) {
	c, err := parseConnLimit(s)
	if err != nil {
		return c, fmt.Errorf("smtptest: connection limit %q: %w", s, err)
	}
	return c, nil
}

func parseConnLimit(s string) (ConnLimit, error) {
	var c ConnLimit
	n, reply, hasReply := strings.Cut(s, "=")
	max, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || max < 1 || max > 1_000_000 {
		return c, errors.New("want MAX[=REPLY] with MAX from 1, e.g. 2=421 4.7.0 Too many connections")
	}
	c.Max = max
	if hasReply {
		var r Rule
		if err := parseAction(&r, reply); err != nil {
			return c, err
		}
		if r.Code == 0 || r.Delay != 0 || r.Drop {
			return c, errors.New("the reply must be CODE [ENH] [TEXT]")
		}
		c.Code, c.Enhanced, c.Text = r.Code, r.Enhanced, r.Text
	}
	return c, c.Validate()
}

// Validate reports whether c can be served.
func (c ConnLimit) Validate() error {
	if c.Max < 0 {
		return errors.New("negative connection limit")
	}
	if c.Code == 0 && c.Enhanced == smtp.EnhancedCodeNotSet && c.Text == "" {
		return nil
	}
	if c.Code < 400 {
		return fmt.Errorf("reply code %d: a connection limit refuses, want 4xx or 5xx", c.Code)
	}
	return Rule{Stage: StageGreeting, Code: c.Code, Enhanced: c.Enhanced, Text: c.Text}.Validate()
}

// String renders c as ParseConnLimit accepts it; "" when there is no limit.
func (c ConnLimit) String() string {
	if c.Max == 0 {
		return ""
	}
	if c.Code == 0 {
		return strconv.Itoa(c.Max)
	}
	_, action, _ := strings.Cut(Rule{Stage: StageGreeting, Code: c.Code, Enhanced: c.Enhanced, Text: c.Text}.String(), "=")
	return strconv.Itoa(c.Max) + "=" + action
}

// smtpError is the refusal c answers with, defaults filled in.
func (c ConnLimit) smtpError() *smtp.SMTPError {
	if c.Code == 0 {
		return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "Too many connections from your host"}
	}
	e := Rule{Code: c.Code, Enhanced: c.Enhanced, Text: c.Text}.smtpError()
	if c.Text == "" {
		e.Message = "Too many connections from your host"
	}
	return e
}
