package smtptest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// Stage names a point of an SMTP session. The names match smtpcodes.Stage so
// events from this server read the same as relayq's own classification.
type Stage string

// Stages at which rules apply and events are recorded. StageAuth is only
// recorded, never scripted: AUTH outcomes come from the configured users.
const (
	StageGreeting Stage = "greeting"
	StageEHLO     Stage = "ehlo"
	StageAuth     Stage = "auth"
	StageMail     Stage = "mail"
	StageRcpt     Stage = "rcpt"
	StageData     Stage = "data"
	// StageBounce and StageComplaint record the reports a rule's "then"
	// sent after the 250 (never scripted themselves).
	StageBounce    Stage = "bounce"
	StageComplaint Stage = "complaint"
)

// maxRuleDelay bounds a scripted delay so that a typo cannot hang a test run.
const maxRuleDelay = time.Hour

// EnhancedCode is an RFC 3463 enhanced status code, {class, subject,
// detail}: EnhancedCode{5, 1, 1} is 5.1.1. It is the SMTP server's own type,
// named here because that server is internal to relayq and its import path
// cannot be used outside the module.
type EnhancedCode = smtp.EnhancedCode

// Rule scripts the server's behaviour at one stage. Its textual form, shared
// with cmd/fakemx, is parsed by ParseRule and produced by String.
//
// The match is tried, case-insensitively as a substring, against the stage's
// argument: the client IP at greeting, the HELO name at ehlo, the sender at
// mail, the recipient at rcpt, and the sender or any recipient at data. An
// empty Match applies to every command at the stage.
type Rule struct {
	// Stage is where the rule applies: greeting, ehlo, mail, rcpt or data.
	Stage Stage
	// Match selects commands by substring (e.g. "nobody@"); empty means all.
	Match string
	// Attempt, when non-zero, limits the rule to the Nth command at Stage
	// whose argument matched Match, counted across connections. Several rules
	// with Attempt 1, 2, ... script a sequence; after it, later rules apply.
	Attempt int
	// Delay is waited before replying (or dropping), to exercise timeouts.
	Delay time.Duration
	// Drop closes the connection without any reply.
	Drop bool
	// Code is the reply code. 0 means no scripted reply (only Delay); a 2xx
	// code lets the command succeed (its text is used only at data).
	Code int
	// Enhanced is the RFC 3463 code; the zero value means "X.0.0".
	Enhanced EnhancedCode
	// Text is the reply text; empty means a generic text.
	Text string
	// Then, at rcpt with a 2xx code, schedules a report about the recipient
	// once its message is accepted: "250 then bounce 5.1.1 after 2s".
	Then Then
}

// ParseRule parses `STAGE[:MATCH][#N]=ACTION`, where ACTION is
// `[delay DURATION] (drop | CODE [ENH] [TEXT])` and at least one part is
// present. Examples:
//
//	rcpt:nobody@example.test=550 5.1.1 No such user
//	greeting=421 4.3.2 Busy
//	rcpt:bob@#1=421 4.3.2 Try later
//	data=delay 30s 250 OK
//	data:carol@=drop
//	rcpt:gone@=250 then bounce 5.1.1 after 2s
//	rcpt:angry@=250 then complain abuse after 2s
//
// A 2xx reply at rcpt may be followed by `then bounce STATUS [TEXT] [after
// DURATION]` or `then complain FEEDBACK-TYPE [after DURATION]` (see Then).
func ParseRule(s string) (Rule, error) {
	r, err := parseRule(s)
	if err != nil {
		return r, fmt.Errorf("smtptest: rule %q: %w", s, err)
	}
	return r, nil
}

// parseRule is ParseRule with errors that do not repeat the input.
func parseRule(s string) (Rule, error) {
	var r Rule
	lhs, rhs, ok := strings.Cut(s, "=")
	if !ok {
		return r, errors.New("missing '=': want STAGE[:MATCH][#N]=ACTION, e.g. rcpt:nobody@=550 5.1.1 No such user")
	}
	if i := strings.LastIndexByte(lhs, '#'); i >= 0 {
		n, err := strconv.Atoi(lhs[i+1:])
		if err != nil || n < 1 || n > 1_000_000 || lhs[i+1] == '+' {
			return r, errors.New("attempt after '#' must be a number from 1")
		}
		r.Attempt = n
		lhs = lhs[:i]
	}
	stage, match, hasMatch := strings.Cut(lhs, ":")
	r.Stage = Stage(strings.ToLower(strings.TrimSpace(stage)))
	r.Match = match
	if hasMatch && match == "" {
		return r, errors.New("empty match after ':'")
	}
	if err := parseAction(&r, rhs); err != nil {
		return r, err
	}
	return r, r.Validate()
}

// parseAction fills the delay, drop and reply parts of r from the text after '='.
func parseAction(r *Rule, s string) error {
	tok, rest := nextToken(s)
	if strings.EqualFold(tok, "delay") {
		var d string
		d, rest = nextToken(rest)
		dur, err := time.ParseDuration(d)
		if err != nil {
			return fmt.Errorf("bad delay %q: %w", d, err)
		}
		if dur <= 0 {
			return errors.New("delay must be positive")
		}
		r.Delay = dur
		tok, rest = nextToken(rest)
	}
	switch {
	case tok == "":
		if r.Delay == 0 {
			return errors.New("empty action: want drop, a reply or a delay")
		}
		return nil
	case strings.EqualFold(tok, "drop"):
		r.Drop = true
		if strings.TrimSpace(rest) != "" {
			return errors.New("nothing may follow drop")
		}
		return nil
	}
	if len(tok) != 3 {
		return fmt.Errorf("bad reply code %q", tok)
	}
	code, err := strconv.Atoi(tok)
	if err != nil || tok[0] == '+' || tok[0] == '-' {
		return fmt.Errorf("bad reply code %q", tok)
	}
	r.Code = code
	if enh, after := nextToken(rest); enh != "" && enh[0] >= '0' && enh[0] <= '9' && strings.Contains(enh, ".") {
		ec, err := parseEnhanced(enh)
		if err != nil {
			return err
		}
		r.Enhanced = ec
		rest = after
	}
	r.Text = strings.TrimSpace(rest)
	if text, then, ok := splitThen(r.Text); ok {
		t, err := parseThen(then)
		if err != nil {
			return err
		}
		r.Text, r.Then = text, t
	}
	return nil
}

// parseEnhanced parses an RFC 3463 status code "class.subject.detail".
func parseEnhanced(s string) (smtp.EnhancedCode, error) {
	var ec smtp.EnhancedCode
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return ec, fmt.Errorf("bad enhanced code %q", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || p == "" || p[0] == '+' || p[0] == '-' || n > 999 || len(p) > 3 {
			return ec, fmt.Errorf("bad enhanced code %q", s)
		}
		ec[i] = n
	}
	return ec, nil
}

// nextToken splits off the first space-separated word of s.
func nextToken(s string) (tok, rest string) {
	s = strings.TrimLeft(s, " \t")
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i+1:]
}

// Validate reports whether r can be served and written back by String.
func (r Rule) Validate() error {
	switch r.Stage {
	case StageGreeting, StageEHLO, StageMail, StageRcpt, StageData:
	default:
		return fmt.Errorf("unknown stage %q (want greeting, ehlo, mail, rcpt or data)", r.Stage)
	}
	if strings.ContainsAny(r.Match, "=# \t") || hasControl(r.Match) {
		return fmt.Errorf("match %q may not contain '=', '#', spaces or control characters", r.Match)
	}
	if r.Attempt < 0 {
		return errors.New("negative attempt")
	}
	if r.Delay < 0 || r.Delay > maxRuleDelay {
		return fmt.Errorf("delay %v out of range (0..%v)", r.Delay, maxRuleDelay)
	}
	if err := r.Then.validate(); err != nil {
		return err
	}
	if r.Then.Report != ReportNone && (r.Stage != StageRcpt || r.Code/100 != 2) {
		return errors.New("then bounce/complain follows only a 2xx reply at rcpt")
	}
	if r.Drop && r.Code != 0 {
		return errors.New("a rule cannot both drop and reply")
	}
	if r.Code == 0 {
		if r.Enhanced != smtp.EnhancedCodeNotSet || r.Text != "" {
			return errors.New("enhanced code or text without a reply code")
		}
		if !r.Drop && r.Delay == 0 {
			return errors.New("rule does nothing: want drop, a reply or a delay")
		}
		return nil
	}
	class := r.Code / 100
	if r.Code < 200 || r.Code > 599 || class == 3 {
		return fmt.Errorf("reply code %d: want 2xx, 4xx or 5xx", r.Code)
	}
	if r.Enhanced != smtp.EnhancedCodeNotSet && r.Enhanced[0] != class {
		// RFC 3463 section 2: the class digit repeats the reply's class.
		return fmt.Errorf("enhanced code %d.%d.%d does not match reply class %dxx", r.Enhanced[0], r.Enhanced[1], r.Enhanced[2], class)
	}
	for _, n := range r.Enhanced {
		if n < 0 || n > 999 {
			return errors.New("enhanced code out of range")
		}
	}
	if hasControl(r.Text) || strings.TrimSpace(r.Text) != r.Text {
		// A CR or LF in the text would let a rule inject extra reply lines.
		return errors.New("text may not contain control characters or surrounding spaces")
	}
	return nil
}

// hasControl reports whether s contains ASCII control characters.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// String renders r in the syntax ParseRule accepts.
func (r Rule) String() string {
	var b strings.Builder
	b.WriteString(string(r.Stage))
	if r.Match != "" {
		b.WriteString(":" + r.Match)
	}
	if r.Attempt != 0 {
		b.WriteString("#" + strconv.Itoa(r.Attempt))
	}
	b.WriteString("=")
	var parts []string
	if r.Delay != 0 {
		parts = append(parts, "delay", r.Delay.String())
	}
	if r.Drop {
		parts = append(parts, "drop")
	}
	if r.Code != 0 {
		parts = append(parts, strconv.Itoa(r.Code))
		if r.Enhanced != smtp.EnhancedCodeNotSet {
			parts = append(parts, fmt.Sprintf("%d.%d.%d", r.Enhanced[0], r.Enhanced[1], r.Enhanced[2]))
		}
		if r.Text != "" {
			parts = append(parts, r.Text)
		}
	}
	if r.Then.Report != ReportNone {
		parts = append(parts, "then", r.Then.String())
	}
	b.WriteString(strings.Join(parts, " "))
	return b.String()
}

// smtpError is the reply r scripts, with defaults filled in.
func (r Rule) smtpError() *smtp.SMTPError {
	e := &smtp.SMTPError{Code: r.Code, EnhancedCode: r.Enhanced, Message: r.Text}
	if e.EnhancedCode == smtp.EnhancedCodeNotSet {
		e.EnhancedCode = smtp.EnhancedCode{r.Code / 100, 0, 0}
	}
	if e.Message == "" {
		e.Message = "Scripted reply"
	}
	return e
}

// replyLine formats an SMTP reply the way go-smtp writes it, without CRLF.
func replyLine(e *smtp.SMTPError) string {
	if e.EnhancedCode == smtp.NoEnhancedCode {
		return fmt.Sprintf("%d %s", e.Code, e.Message)
	}
	return fmt.Sprintf("%d %d.%d.%d %s", e.Code, e.EnhancedCode[0], e.EnhancedCode[1], e.EnhancedCode[2], e.Message)
}
