package smtptest

import (
	"errors"
	"fmt"
	"log"
	"net"
	"strings"
	"time"
)

// Config is everything a Server can be told, as a plain struct so that
// cmd/fakemx can build one from flags. The zero value is a plain server that
// accepts everything on 127.0.0.1 with a random port.
type Config struct {
	// Addr is the listen address; empty means "127.0.0.1:0".
	Addr string
	// Hostname is announced in the greeting; empty means "fakemx.localhost".
	Hostname string

	// Greylist, when positive, defers each new (client IP, sender,
	// recipient) triplet at RCPT with 451 4.7.1 until Greylist has passed.
	Greylist time.Duration
	// GreylistExpiry, when positive, forgets an unconfirmed triplet that is
	// retried later than this after it was first seen.
	GreylistExpiry time.Duration
	// GreylistText replaces the 451 text. The default names the remaining
	// wait ("try again in N seconds"); many real greylisters (Postgrey's
	// "Greylisted, see URL") name none, and a client must fall back to its
	// own backoff.
	GreylistText string
	// Clock supplies the time for greylisting and records; nil means time.Now.
	Clock func() time.Time

	// Rules script replies, faults and delays; the first that applies wins.
	Rules []Rule
	// RateLimits refuse commands once a client's (or sender domain's) token
	// bucket is empty; they apply after Rules and before greylisting.
	RateLimits []RateRule
	// ConnLimit refuses connections at greeting beyond a number open per IP.
	ConnLimit ConnLimit
	// Personas play providers (see Persona); PersonaFiles add personas to
	// the built-in ones.
	Personas     []string
	PersonaFiles []string
	// ReturnTo is the next hop ("host:port") through which reports that
	// rules schedule with "then" (bounces, complaints) are sent by SMTP to
	// the message's sender; empty means they are recorded as not sent.
	ReturnTo string

	// StartTLS offers STARTTLS with a self-signed certificate made at start.
	StartTLS bool
	// ImplicitTLS serves TLS from the first byte (RFC 8314 "submissions").
	ImplicitTLS bool
	// Cert, if set, is presented instead of a certificate made at start.
	Cert *Cert
	// Users, when non-empty, offers AUTH PLAIN and LOGIN and refuses MAIL
	// before a successful AUTH. Keys are user names, values passwords.
	Users map[string]string
	// AllowInsecureAuth offers AUTH without TLS (go-smtp hides it otherwise).
	AllowInsecureAuth bool

	// SMTPUTF8 offers SMTPUTF8 (RFC 6531); without it the server is one
	// that a client must not send UTF-8 addresses or headers to.
	SMTPUTF8 bool
	// No8BitMIME hides 8BITMIME (RFC 6152), which go-smtp always offers,
	// to play a server that a client must send only 7-bit data to (like
	// smtp-sink -8). It takes the keyword out of the EHLO reply on the
	// wire, so it cannot be combined with TLS.
	No8BitMIME bool

	// DiscardBodies keeps only message sizes, not bodies, for benchmarks.
	DiscardBodies bool
	// DiscardEvents counts events without keeping them, for benchmarks.
	DiscardEvents bool
	// MaxMessageBytes limits DATA; 0 means unlimited.
	MaxMessageBytes int64
	// MaxRecipients limits the recipients of one transaction: each RCPT
	// beyond it gets "452 4.5.3" (RFC 5321 section 4.5.3.1.10), and
	// LIMITS RCPTMAX is offered (RFC 9422). 0 means unlimited.
	MaxRecipients int
	// ReadTimeout closes idle connections; 0 means never.
	ReadTimeout time.Duration

	// OnEvent and OnMessage are called, one call at a time, after each event
	// or accepted message is recorded. A slow hook slows the server.
	OnEvent   func(Event)
	OnMessage func(Message)

	// HTTPAllowedHosts are the host names, beyond IP addresses and
	// localhost, that HTTPHandler answers in the Host header: "name" for
	// any port, "name:port" for that port only (the rule of relayq's
	// admin.allowed_hosts). A request for any other name gets 403: a web
	// page cannot read captured mail or rewrite the script through a DNS
	// name it rebinds to 127.0.0.1.
	HTTPAllowedHosts []string

	// ErrorLog receives go-smtp's internal errors; nil discards them.
	ErrorLog *log.Logger
}

// validate checks cfg before anything is started.
func (cfg *Config) validate() error {
	if err := cfg.script().Validate(); err != nil {
		return fmt.Errorf("smtptest: %w", err)
	}
	if cfg.StartTLS && cfg.ImplicitTLS {
		return errors.New("smtptest: choose StartTLS or ImplicitTLS, not both")
	}
	if cfg.No8BitMIME && (cfg.StartTLS || cfg.ImplicitTLS) {
		return errors.New("smtptest: No8BitMIME cannot be combined with TLS")
	}
	if cfg.ReturnTo != "" {
		if _, _, err := net.SplitHostPort(cfg.ReturnTo); err != nil {
			return fmt.Errorf("smtptest: return-to %q: want host:port", cfg.ReturnTo)
		}
	}
	for u := range cfg.Users {
		if u == "" || strings.ContainsAny(u, "\x00") {
			return fmt.Errorf("smtptest: bad user name %q", u)
		}
	}
	return nil
}

// script is the replaceable part of cfg.
func (cfg *Config) script() Script {
	return Script{
		Greylist:       cfg.Greylist,
		GreylistExpiry: cfg.GreylistExpiry,
		GreylistText:   cfg.GreylistText,
		Rules:          cfg.Rules,
		RateLimits:     cfg.RateLimits,
		ConnLimit:      cfg.ConnLimit,
		Personas:       cfg.Personas,
	}
}

// Option changes a Config; NewServer applies options in order.
type Option func(*Config) error

// Greylist defers new triplets at RCPT until delay has passed (RFC 6647).
func Greylist(delay time.Duration) Option {
	return func(c *Config) error { c.Greylist = delay; return nil }
}

// GreylistExpiry forgets unconfirmed triplets retried later than d.
func GreylistExpiry(d time.Duration) Option {
	return func(c *Config) error { c.GreylistExpiry = d; return nil }
}

// GreylistText sets the text of the greylisting 451 (see Config.GreylistText).
func GreylistText(text string) Option {
	return func(c *Config) error { c.GreylistText = text; return nil }
}

// WithClock makes greylisting and records use now instead of time.Now, so
// tests can move time forward without sleeping.
func WithClock(now func() time.Time) Option {
	return func(c *Config) error { c.Clock = now; return nil }
}

// WithRules appends rules built as structs.
func WithRules(rules ...Rule) Option {
	return func(c *Config) error { c.Rules = append(c.Rules, rules...); return nil }
}

// Reply appends rules written in ParseRule's syntax, e.g.
// "rcpt:nobody@=550 5.1.1 No such user".
func Reply(specs ...string) Option {
	return func(c *Config) error {
		for _, s := range specs {
			r, err := ParseRule(s)
			if err != nil {
				return err
			}
			c.Rules = append(c.Rules, r)
		}
		return nil
	}
}

// Sequence scripts the replies to the 1st, 2nd, ... command at stage that
// matches match, counted across connections; each action is the part of a
// rule after '=' ("421 4.3.2 Busy", "drop", "delay 2s", "250"). After the
// sequence, later rules, greylisting or acceptance apply.
func Sequence(stage Stage, match string, actions ...string) Option {
	return func(c *Config) error {
		for i, a := range actions {
			prefix := string(stage)
			if match != "" {
				prefix += ":" + match
			}
			r, err := ParseRule(fmt.Sprintf("%s#%d=%s", prefix, i+1, a))
			if err != nil {
				return err
			}
			c.Rules = append(c.Rules, r)
		}
		return nil
	}
}

// RateLimit appends rate limits written in ParseRateLimit's syntax, e.g.
// "rcpt:*@gmail.test=10/min=421 4.7.28 Unusual rate of mail" or, per
// sender domain, "mail=5/min,per=sender=451 4.7.1 Slow down".
func RateLimit(specs ...string) Option {
	return func(c *Config) error {
		for _, s := range specs {
			l, err := ParseRateLimit(s)
			if err != nil {
				return err
			}
			c.RateLimits = append(c.RateLimits, l)
		}
		return nil
	}
}

// WithRateLimits appends rate limits built as structs.
func WithRateLimits(limits ...RateRule) Option {
	return func(c *Config) error { c.RateLimits = append(c.RateLimits, limits...); return nil }
}

// MaxConnsPerIP refuses a connection at greeting when its IP already has max
// open, with the reply written after '=' in spec ("2=421 4.7.0 Too many
// connections"; a bare number uses that reply).
func MaxConnsPerIP(spec string) Option {
	return func(c *Config) error {
		l, err := ParseConnLimit(spec)
		c.ConnLimit = l
		return err
	}
}

// ReturnTo sends the reports of "then bounce" and "then complain" rules
// through the SMTP server at addr ("host:port"), to the message's sender.
func ReturnTo(addr string) Option {
	return func(c *Config) error { c.ReturnTo = addr; return nil }
}

// StartTLS offers STARTTLS with a certificate generated at start.
func StartTLS() Option { return func(c *Config) error { c.StartTLS = true; return nil } }

// ImplicitTLS serves TLS from the first byte.
func ImplicitTLS() Option { return func(c *Config) error { c.ImplicitTLS = true; return nil } }

// WithCert presents c for STARTTLS or implicit TLS.
func WithCert(c *Cert) Option { return func(cfg *Config) error { cfg.Cert = c; return nil } }

// MaxRecipients refuses each RCPT beyond n in one transaction with 452
// 4.5.3.
func MaxRecipients(n int) Option {
	return func(c *Config) error {
		if n < 0 {
			return fmt.Errorf("smtptest: max recipients %d: want 0 (unlimited) or more", n)
		}
		c.MaxRecipients = n
		return nil
	}
}

// SMTPUTF8 offers the SMTPUTF8 extension (RFC 6531).
func SMTPUTF8() Option { return func(c *Config) error { c.SMTPUTF8 = true; return nil } }

// No8BitMIME does not offer 8BITMIME (see Config.No8BitMIME).
func No8BitMIME() Option { return func(c *Config) error { c.No8BitMIME = true; return nil } }

// Auth adds a user and makes AUTH (PLAIN or LOGIN) required before MAIL.
func Auth(user, pass string) Option {
	return func(c *Config) error {
		if c.Users == nil {
			c.Users = make(map[string]string)
		}
		c.Users[user] = pass
		return nil
	}
}

// AllowInsecureAuth offers AUTH on connections without TLS.
func AllowInsecureAuth() Option {
	return func(c *Config) error { c.AllowInsecureAuth = true; return nil }
}

// HTTPAllowedHosts sets Config.HTTPAllowedHosts: names HTTPHandler answers
// besides IP addresses and localhost.
func HTTPAllowedHosts(names ...string) Option {
	return func(c *Config) error { c.HTTPAllowedHosts = append(c.HTTPAllowedHosts, names...); return nil }
}

// DiscardBodies keeps message sizes but not bodies.
func DiscardBodies() Option { return func(c *Config) error { c.DiscardBodies = true; return nil } }

// DiscardEvents counts events without keeping them.
func DiscardEvents() Option { return func(c *Config) error { c.DiscardEvents = true; return nil } }

// OnMessage calls f after each accepted message is recorded.
func OnMessage(f func(Message)) Option {
	return func(c *Config) error { c.OnMessage = f; return nil }
}

// OnEvent calls f after each event is recorded.
func OnEvent(f func(Event)) Option {
	return func(c *Config) error { c.OnEvent = f; return nil }
}

// WithConfig replaces the whole configuration built so far with cfg.
func WithConfig(cfg Config) Option {
	return func(c *Config) error { *c = cfg; return nil }
}
