package smtptest

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// ReportKind names what the server does after it accepted a recipient with
// 250: nothing (the zero value), bounce or complain.
type ReportKind string

// The reports a rule can schedule with "then".
const (
	ReportNone      ReportKind = ""
	ReportBounce    ReportKind = "bounce"
	ReportComplaint ReportKind = "complain"
)

// FeedbackType is an RFC 5965 Feedback-Type.
type FeedbackType string

// The registered feedback types: RFC 5965 section 7.3, and RFC 6430's
// not-spam.
const (
	FeedbackAbuse   FeedbackType = "abuse"
	FeedbackFraud   FeedbackType = "fraud"
	FeedbackVirus   FeedbackType = "virus"
	FeedbackOther   FeedbackType = "other"
	FeedbackNotSpam FeedbackType = "not-spam"
)

// Then is what happens after a rcpt rule's 2xx: a report about the
// recipient, sent by SMTP to the message's sender through Config.ReturnTo
// once After has passed by the server's clock. It plays the provider that
// accepts first and bounces later, and the recipient who clicks "report spam".
type Then struct {
	// Report is bounce or complain; ReportNone means nothing follows.
	Report ReportKind
	// Status is a bounce's RFC 3463 status, class 5 (e.g. 5.1.1).
	Status EnhancedCode
	// Text is a bounce's diagnostic text; empty means a generic one.
	Text string
	// Feedback is a complaint's Feedback-Type.
	Feedback FeedbackType
	// After is how long after the message's acceptance the report is sent.
	After time.Duration
}

// parseThen parses the text after "then": `bounce STATUS [TEXT] [after
// DURATION]` or `complain TYPE [after DURATION]`.
func parseThen(s string) (Then, error) {
	var t Then
	if rest, d, ok := cutAfter(s); ok {
		dur, err := time.ParseDuration(d)
		if err != nil || dur < 0 {
			return t, fmt.Errorf("bad duration after 'after': %q", d)
		}
		t.After, s = dur, rest
	}
	kind, rest := nextToken(s)
	switch ReportKind(strings.ToLower(kind)) {
	case ReportBounce:
		t.Report = ReportBounce
		enh, text := nextToken(rest)
		ec, err := parseEnhanced(enh)
		if err != nil {
			return t, fmt.Errorf("then bounce: %w (want e.g. 5.1.1)", err)
		}
		t.Status, t.Text = ec, strings.TrimSpace(text)
	case ReportComplaint:
		t.Report = ReportComplaint
		ft, extra := nextToken(rest)
		if strings.TrimSpace(extra) != "" {
			return t, fmt.Errorf("then complain: unexpected %q after the feedback type", strings.TrimSpace(extra))
		}
		t.Feedback = FeedbackType(strings.ToLower(ft))
	default:
		return t, fmt.Errorf("after 'then': want bounce or complain, got %q", kind)
	}
	return t, t.validate()
}

// cutAfter splits a trailing "after DURATION" off s.
// It cuts at field boundaries in s itself: lower-casing first would shift
// byte offsets wherever case mapping changes a character's length.
func cutAfter(s string) (rest, dur string, ok bool) {
	head, last := cutLastField(s)
	head, word := cutLastField(head)
	if last == "" || !strings.EqualFold(word, "after") {
		return s, "", false
	}
	return strings.TrimSpace(head), last, true
}

// cutLastField splits s into what precedes its last field (trimmed) and
// that field.
func cutLastField(s string) (head, last string) {
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	i := strings.LastIndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return "", s
	}
	_, size := utf8.DecodeRuneInString(s[i:])
	return strings.TrimRightFunc(s[:i], unicode.IsSpace), s[i+size:]
}

// splitThen cuts a reply text at the word "then" followed by bounce or
// complain; the text before it stays the reply's own.
func splitThen(text string) (reply, then string, ok bool) {
	fields := strings.Fields(text)
	for i := 0; i+1 < len(fields); i++ {
		k := ReportKind(strings.ToLower(fields[i+1]))
		if strings.EqualFold(fields[i], "then") && (k == ReportBounce || k == ReportComplaint) {
			return strings.Join(fields[:i], " "), strings.Join(fields[i+1:], " "), true
		}
	}
	return text, "", false
}

func (t Then) validate() error {
	switch t.Report {
	case ReportNone:
		if t != (Then{}) {
			return errors.New("then: fields set without a report")
		}
		return nil
	case ReportBounce:
		if t.Status[0] != 5 {
			return fmt.Errorf("then bounce: status %d.%d.%d must be permanent (5.x.x): a bounce reports a failure", t.Status[0], t.Status[1], t.Status[2])
		}
		if hasControl(t.Text) || strings.TrimSpace(t.Text) != t.Text || strings.Contains(strings.ToLower(" "+t.Text+" "), " after ") {
			return errors.New("then bounce: text may not contain control characters, surrounding spaces or the word 'after'")
		}
		if t.Feedback != "" {
			return errors.New("then bounce: a bounce has no feedback type")
		}
	case ReportComplaint:
		switch t.Feedback {
		case FeedbackAbuse, FeedbackFraud, FeedbackVirus, FeedbackOther, FeedbackNotSpam:
		default:
			return fmt.Errorf("then complain: feedback type %q (want abuse, fraud, virus, other or not-spam)", t.Feedback)
		}
		if t.Status != (smtp.EnhancedCode{}) || t.Text != "" {
			return errors.New("then complain: a complaint has no status or text")
		}
	default:
		return fmt.Errorf("then: unknown report %q", t.Report)
	}
	if t.After < 0 || t.After > maxReportDelay {
		return fmt.Errorf("then: after %v out of range (0..%v)", t.After, maxReportDelay)
	}
	return nil
}

// maxReportDelay bounds how long a report may wait, as maxRuleDelay does
// for delays: real feedback loops report within a day.
const maxReportDelay = 24 * time.Hour

// String renders t as the part of a rule after "then".
func (t Then) String() string {
	var parts []string
	switch t.Report {
	case ReportBounce:
		parts = append(parts, string(t.Report), fmt.Sprintf("%d.%d.%d", t.Status[0], t.Status[1], t.Status[2]))
		if t.Text != "" {
			parts = append(parts, t.Text)
		}
	case ReportComplaint:
		parts = append(parts, string(t.Report), string(t.Feedback))
	}
	if t.After > 0 {
		parts = append(parts, "after", t.After.String())
	}
	return strings.Join(parts, " ")
}
