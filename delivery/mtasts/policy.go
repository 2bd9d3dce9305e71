package mtasts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Mode is a policy's mode.
type Mode string

// The modes of RFC 8461 section 5.
const (
	ModeEnforce Mode = "enforce"
	ModeTesting Mode = "testing"
	ModeNone    Mode = "none"
)

// MaxMaxAge is the largest max_age a policy may have (about one year).
const MaxMaxAge = 31557600 * time.Second

// Policy is a parsed MTA-STS policy.
type Policy struct {
	Mode   Mode
	MX     []string // patterns, lower case, without trailing dot
	MaxAge time.Duration
}

// ParsePolicy reads a policy file (RFC 8461 section 3.2). Unknown fields
// are ignored; of a repeated field other than mx the first counts.
func ParsePolicy(b []byte) (Policy, error) {
	var p Policy
	seen := map[string]bool{}
	version := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return Policy{}, fmt.Errorf("mtasts: policy line %q is not key: value", line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k != "mx" && seen[k] {
			continue
		}
		seen[k] = true
		switch k {
		case "version":
			version = v
		case "mode":
			p.Mode = Mode(v)
			if p.Mode != ModeEnforce && p.Mode != ModeTesting && p.Mode != ModeNone {
				return Policy{}, fmt.Errorf("mtasts: mode %q is not enforce, testing or none", v)
			}
		case "max_age":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || len(v) > 10 || n > uint64(MaxMaxAge/time.Second) {
				return Policy{}, fmt.Errorf("mtasts: max_age %q is not a number of seconds up to %d", v, int64(MaxMaxAge/time.Second))
			}
			p.MaxAge = time.Duration(n) * time.Second
		case "mx":
			if !validPattern(v) {
				return Policy{}, fmt.Errorf("mtasts: mx %q is not a host name or *.domain pattern", v)
			}
			p.MX = append(p.MX, strings.ToLower(strings.TrimSuffix(v, ".")))
		}
	}
	switch {
	case version != "STSv1":
		return Policy{}, fmt.Errorf("mtasts: version %q, want STSv1", version)
	case p.Mode == "":
		return Policy{}, errors.New("mtasts: policy without mode")
	case !seen["max_age"]:
		return Policy{}, errors.New("mtasts: policy without max_age")
	case p.Mode != ModeNone && len(p.MX) == 0:
		return Policy{}, fmt.Errorf("mtasts: %s policy without mx", p.Mode)
	}
	return p, nil
}

func validPattern(s string) bool {
	s = strings.TrimPrefix(strings.TrimSuffix(s, "."), "*.")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
				return false
			}
		}
	}
	return true
}

// Matches reports whether host (an MX host name) matches one of the
// policy's mx patterns (RFC 8461 section 4.1).
func (p Policy) Matches(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, pat := range p.MX {
		if rest, ok := strings.CutPrefix(pat, "*."); ok {
			label, parent, found := strings.Cut(host, ".")
			if found && label != "" && parent == rest {
				return true
			}
			continue
		}
		if host == pat {
			return true
		}
	}
	return false
}

// ParseTXT reads an _mta-sts TXT record ("v=STSv1; id=20160831085700Z;")
// and returns its id (RFC 8461 section 3.1).
func ParseTXT(txt string) (string, error) {
	fields := strings.Split(txt, ";")
	id := ""
	for i, f := range fields {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return "", fmt.Errorf("mtasts: TXT field %q is not key=value", f)
		}
		switch {
		case i == 0 && (k != "v" || v != "STSv1"):
			return "", fmt.Errorf("mtasts: TXT record does not start with v=STSv1")
		case k == "id" && id == "":
			if !validID(v) {
				return "", fmt.Errorf("mtasts: id %q is not 1 to 32 letters and digits", v)
			}
			id = v
		}
	}
	if id == "" {
		return "", errors.New("mtasts: TXT record without id")
	}
	return id, nil
}

func validID(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !((r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}
