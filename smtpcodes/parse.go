package smtpcodes

import (
	"errors"
	"fmt"
	"strings"
)

// ParseReply parses a textual SMTP reply as sent on the wire or as stored by
// Reply.String: "451 4.7.1 Greylisted", or multi-line "250-a\r\n250 b" where
// every line carries the same code and only the last has a space (or nothing)
// after it (RFC 5321 §4.2). Lines may end in CRLF or LF.
//
// The reply code is checked strictly (RFC 5321 §4.2.1: first digit 2-5,
// second 0-5, three digits); the text is not, it is made one clean line. An
// RFC 3463 enhanced code at the start of the first line with text is taken (and
// stripped from later lines that repeat it, RFC 2034 §4); without one it is
// derived as X.0.0. Class follows the code, 3xx counting as success because
// without a stage there is no telling where it was unexpected.
func ParseReply(s string) (Reply, error) {
	s = strings.TrimSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\r")
	if s == "" {
		return Reply{}, errors.New("smtpcodes: parse reply: empty")
	}
	lines := strings.Split(s, "\n")
	code := 0
	texts := make([]string, 0, len(lines))
	for i, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		c, err := parseCode(line)
		if err != nil {
			return Reply{}, fmt.Errorf("smtpcodes: parse reply line %d: %w", i+1, err)
		}
		if i == 0 {
			code = c
		} else if c != code {
			return Reply{}, fmt.Errorf("smtpcodes: parse reply line %d: code %d differs from %d", i+1, c, code)
		}
		last := i == len(lines)-1
		switch {
		case len(line) == 3 && last:
		case len(line) > 3 && line[3] == '-' && !last:
		case len(line) > 3 && line[3] == ' ' && last:
		case last:
			return Reply{}, fmt.Errorf("smtpcodes: parse reply line %d: last line must have a space after the code", i+1)
		default:
			return Reply{}, fmt.Errorf("smtpcodes: parse reply line %d: continued line must have '-' after the code", i+1)
		}
		if len(line) > 4 {
			// Cleaned before the enhanced code is looked for, so that what
			// the code is told apart from is the text Reply keeps:
			// "2.0.0\v" is a code, as its quote "2.0.0" would be.
			texts = append(texts, OneLine(line[4:]))
		} else {
			texts = append(texts, "")
		}
	}

	c := Success
	switch code / 100 {
	case 4:
		c = Transient
	case 5:
		c = Permanent
	}
	enh, sent := enhanced{}, ""
	// The code is looked for on the first line with text: "421-\n421 4.7.0
	// busy" reads as its quote "421 4.7.0 busy" does.
	first := 0
	for first < len(texts)-1 && texts[first] == "" {
		first++
	}
	if token, rest, ok := enhancedPrefix(texts[first]); ok {
		enh, _ = parseEnhanced(token)
		sent = token
		texts[first] = rest
		for i := first + 1; i < len(texts); i++ {
			if t, r, ok := enhancedPrefix(texts[i]); ok && t == token {
				texts[i] = r
			}
		}
	}
	return Reply{
		Class:    c,
		Code:     code,
		Enhanced: enh.withClass(c).String(),
		Text:     OneLine(strings.Join(texts, " ")),
		Sent:     sent,
	}, nil
}

// parseCode reads the three-digit reply code at the start of line.
func parseCode(line string) (int, error) {
	if len(line) < 3 {
		return 0, fmt.Errorf("short line %q", line)
	}
	d0, d1, d2 := line[0], line[1], line[2]
	if d0 < '2' || d0 > '5' || d1 < '0' || d1 > '5' || d2 < '0' || d2 > '9' {
		return 0, fmt.Errorf("bad reply code %q", line[:3])
	}
	return int(d0-'0')*100 + int(d1-'0')*10 + int(d2-'0'), nil
}

// enhancedPrefix splits a valid enhanced code off the front of a line's text
// (after optional spaces); the code must be followed by a space or the end.
func enhancedPrefix(text string) (token, rest string, ok bool) {
	text = strings.TrimLeft(text, " ")
	token, rest, _ = strings.Cut(text, " ")
	if _, ok := parseEnhanced(token); !ok {
		return "", "", false
	}
	return token, rest, true
}

// StatusOf returns the RFC 3463 status code a recorded reply carries: the
// enhanced code of a server reply ("550 5.1.1 No such user") or of a local
// one ("4.4.1 connection refused", the form Reply.String gives when no
// server answered). ok is false when there is none; the DSN writer then
// falls back to a generic code.
func StatusOf(reply string) (status string, ok bool) {
	if r, err := ParseReply(reply); err == nil && r.Enhanced != "" {
		return r.Enhanced, true
	}
	if token, _, ok := enhancedPrefix(reply); ok {
		return token, true
	}
	return "", false
}
